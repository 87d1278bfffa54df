// Shell completion (bash, zsh) and the man page of a program, generated from
// its command table so that they cannot go stale (the tool we replace
// shipped a hand-written script missing half its flags). canhazgpu and
// k8shazgpu both describe themselves as a ProgramSpec. Pure; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/common/flags.h"

namespace canhazgpu::cli {

struct CommandDoc {
  std::string name;
  std::string summary;  // one line
  std::string usage;    // after "PROGRAM NAME"
  std::vector<FlagSpec> flags;
  bool runs_command = false;       // the words after `--` are a command of their own
  std::vector<std::string> words;  // the positional words it takes ("bash", "zsh")
};

struct ProgramSpec {
  std::string name;                  // "canhazgpu"
  std::vector<std::string> aliases;  // "chg"
  std::vector<CommandDoc> commands;  // the visible ones, in help order
  std::vector<FlagSpec> global_flags;
  // The values of a flag that only the program knows (GPU ids, node names)
  // are listed by `PROGRAM completion WORD`, one per line; `dynamic`
  // returns WORD for such a flag, or "".
  std::function<std::string(const FlagSpec&)> dynamic;
};

std::string BashCompletion(const ProgramSpec& program);
std::string ZshCompletion(const ProgramSpec& program);

struct ManPageText {
  std::string title;        // "CANHAZGPU"
  std::string source;       // "canhazgpu 0.9.0", the version the page describes
  std::string name_line;    // after "NAME": "canhazgpu, chg \- share ..." (roff)
  std::string description;  // roff
  std::string trailing;     // sections after GLOBAL FLAGS (roff)
  // A sentence added to a flag's paragraph (roff), e.g. its environment
  // variable; `scope` is the command name, "" for a global flag.
  std::function<std::string(const std::string& scope, const FlagSpec&)> flag_note;
};

std::string ManPage(const ProgramSpec& program, const ManPageText& text);

// Text for roff: backslashes and dashes escaped, a leading dot or quote
// neutralised.
std::string Roff(const std::string& text);

}  // namespace canhazgpu::cli
