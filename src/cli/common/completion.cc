#include "cli/common/completion.h"

#include <algorithm>
#include <map>

#include "core/strings.h"

namespace canhazgpu::cli {
namespace {

std::vector<FlagSpec> VisibleFlags(const ProgramSpec& program, const CommandDoc& c) {
  std::vector<FlagSpec> out;
  for (const std::vector<FlagSpec>* list : {&c.flags, &program.global_flags}) {
    for (const FlagSpec& f : *list) {
      if (!f.config_only) out.push_back(f);
    }
  }
  return out;
}

std::string FlagWords(const ProgramSpec& program, const CommandDoc& c) {
  std::vector<std::string> words;
  for (const FlagSpec& f : VisibleFlags(program, c)) {
    words.push_back(StrCat("--", f.name));
    if (f.short_name != 0) words.push_back(StrCat("-", f.short_name));
  }
  return Join(words, " ");
}

bool IsFile(const FlagSpec& f) {
  return f.value_name == "FILE" || f.value_name == "PATH" || f.value_name == "PROGRAM";
}

std::string Dynamic(const ProgramSpec& program, const FlagSpec& f) {
  return program.dynamic ? program.dynamic(f) : "";
}

// A shell function name: "_canhazgpu", "_k8shazgpu".
std::string FunctionName(const ProgramSpec& program) {
  std::string out = "_";
  for (char c : program.name) out += (c == '-' || c == '.') ? '_' : c;
  return out;
}

std::string Alternatives(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return Join(v, "|");
}

std::string ZshQuote(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else if (c == '[' || c == ']' || c == ':') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string BashCompletion(const ProgramSpec& program) {
  const std::string fn = FunctionName(program);
  std::string commands, per_command;
  std::vector<std::string> values, files;
  std::map<std::string, std::vector<std::string>> dynamic;  // word -> flags
  for (const CommandDoc& c : program.commands) {
    commands += c.name + " ";
    // A command that takes words (completion bash|zsh) is offered those.
    const std::string flags = c.words.empty() ? FlagWords(program, c) : Join(c.words, " ");
    per_command += StrCat("    ", c.name, ") flags=\"", flags, "\" ;;\n");
    for (const FlagSpec& f : VisibleFlags(program, c)) {
      if (!f.has_value) continue;
      const std::string word = Dynamic(program, f);
      auto& list = !word.empty() ? dynamic[word] : IsFile(f) ? files : values;
      list.push_back(StrCat("--", f.name));
      if (f.short_name != 0) list.push_back(StrCat("-", f.short_name));
    }
  }
  std::string value_cases;
  for (const auto& [word, flags] : dynamic) {
    value_cases += StrCat("    ", Alternatives(flags), R"sh()
      COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" completion )sh",
                          word, R"sh( 2>/dev/null)" -- "$cur"))
      return ;;
)sh");
  }
  if (!files.empty()) {
    value_cases += StrCat("    ", Alternatives(files), R"sh()
      COMPREPLY=($(compgen -f -- "$cur"))
      return ;;
)sh");
  }
  if (!values.empty()) value_cases += StrCat("    ", Alternatives(values), ")\n      return ;;\n");
  std::vector<std::string> names = {program.name};
  names.insert(names.end(), program.aliases.begin(), program.aliases.end());
  return StrCat("# bash completion for ", Join(names, " and "), ": source <(", program.name,
                " completion bash)\n", fn, R"sh(() {
  local cur prev i flags
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  COMPREPLY=()
  # After `--` the words are a command of its own: complete it as such.
  for ((i = 2; i < COMP_CWORD; i++)); do
    if [[ "${COMP_WORDS[i]}" == "--" ]]; then
      if declare -F _command_offset >/dev/null; then _command_offset $((i + 1)); fi
      return
    fi
  done
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W ")sh",
                Trim(commands), R"sh(" -- "$cur"))
    return
  fi
  case "$prev" in
)sh",
                value_cases, R"sh(  esac
  case "${COMP_WORDS[1]}" in
)sh",
                per_command, R"sh(    *) return ;;
  esac
  COMPREPLY=($(compgen -W "$flags" -- "$cur"))
}
complete -F )sh",
                fn, " ", Join(names, " "), "\n");
}

std::string ZshCompletion(const ProgramSpec& program) {
  const std::string fn = FunctionName(program);
  std::vector<std::string> names = {program.name};
  names.insert(names.end(), program.aliases.begin(), program.aliases.end());
  std::string out = StrCat("#compdef ", Join(names, " "), "\n# zsh completion for ", program.name,
                           ": ", program.name, " completion zsh > \"${fpath[1]}/", fn, "\"\n");
  std::map<std::string, bool> words;
  for (const CommandDoc& c : program.commands) {
    for (const FlagSpec& f : VisibleFlags(program, c)) {
      if (f.has_value && !Dynamic(program, f).empty()) words[Dynamic(program, f)] = true;
    }
  }
  for (const auto& [word, unused] : words) {
    std::string helper = StrCat(fn, "_", word);
    for (char& c : helper) c = c == '-' ? '_' : c;
    out += StrCat(helper, "() {\n  local -a values\n  values=(${(f)\"$(${words[1]} completion ",
                  word, " 2>/dev/null)\"})\n  _values -s , '", word, "' $values\n}\n");
  }
  out += StrCat(fn, "() {\n  local -a commands\n  commands=(\n");
  for (const CommandDoc& c : program.commands) {
    out += StrCat("    '", c.name, ":", ZshQuote(c.summary), "'\n");
  }
  out += R"sh(  )
  if ((CURRENT == 2)); then
    _describe 'command' commands
    return
  fi
  local command=$words[2]
  shift words
  ((CURRENT--))
  case $command in
)sh";
  for (const CommandDoc& c : program.commands) {
    out += StrCat("    ", c.name, ")\n      _arguments -s");
    for (const FlagSpec& f : VisibleFlags(program, c)) {
      std::string helper = StrCat(fn, "_", Dynamic(program, f));
      for (char& ch : helper) ch = ch == '-' ? '_' : ch;
      std::string action = !f.has_value                   ? ""
                           : !Dynamic(program, f).empty() ? StrCat(":", f.value_name, ":", helper)
                           : IsFile(f)                    ? StrCat(":", f.value_name, ":_files")
                                                          : StrCat(":", f.value_name, ": ");
      std::string help = ZshQuote(f.help);
      out += StrCat(" \\\n        '--", f.name, "[", help, "]", action, "'");
      if (f.short_name != 0)
        out += StrCat(" \\\n        '-", f.short_name, "[", help, "]", action, "'");
    }
    if (c.runs_command) out += " \\\n        '*::command:_normal'";
    if (!c.words.empty()) out += StrCat(" \\\n        '1:", c.name, ":(", Join(c.words, " "), ")'");
    out += " ;;\n";
  }
  out += StrCat("  esac\n}\n", fn, " \"$@\"\n");
  return out;
}

std::string Roff(const std::string& text) {
  std::string out;
  for (char c : text)
    out += c == '\\' ? std::string("\\e") : c == '-' ? std::string("\\-") : std::string(1, c);
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

namespace {

// Each flag as a tagged paragraph, with the program's note.
std::string FlagsRoff(const ManPageText& text, const std::string& scope,
                      const std::vector<FlagSpec>& flags) {
  std::string out;
  for (const FlagSpec& f : flags) {
    if (f.config_only) continue;
    out += ".TP\n";
    if (f.short_name != 0) out += StrCat("\\fB\\-", f.short_name, "\\fR, ");
    out += StrCat("\\fB\\-\\-", Roff(f.name), "\\fR");
    if (f.has_value) out += StrCat(" \\fI", Roff(f.value_name), "\\fR");
    out += StrCat("\n", Roff(f.help));
    if (!f.default_value.empty()) out += StrCat(" (default ", Roff(f.default_value), ")");
    out += ".\n";
    if (text.flag_note) out += text.flag_note(scope, f);
  }
  return out;
}

}  // namespace

std::string ManPage(const ProgramSpec& program, const ManPageText& text) {
  std::string out =
      StrCat(".TH ", text.title, " 1 \"\" \"", text.source, "\" \"User Commands\"\n.SH NAME\n",
             text.name_line, "\n.SH SYNOPSIS\n\\fB", Roff(program.name),
             "\\fR \\fICOMMAND\\fR [\\fIflags\\fR]\n.SH DESCRIPTION\n", text.description,
             ".SH COMMANDS\n");
  for (const CommandDoc& c : program.commands) {
    out += StrCat(".SS \"", Roff(program.name), " ", c.name, " ", Roff(c.usage), "\"\n",
                  Roff(c.summary), ".\n");
    out += FlagsRoff(text, c.name, c.flags);
  }
  out += StrCat(".SH GLOBAL FLAGS\n", FlagsRoff(text, "", program.global_flags));
  out += text.trailing;
  return out;
}

}  // namespace canhazgpu::cli
