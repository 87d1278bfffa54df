// canhazgpu completion bash|zsh: shell completion for commands, flags and
// GPU ids, generated from the command table so it cannot go stale (the
// tool we replace shipped a hand-written script missing half its flags).
// `canhazgpu manpage` (hidden) prints the man page, made at build time.
#include <cstdio>

#include "alloc/reservations.h"
#include "cli/canhazgpu/commands.h"
#include "cli/common/completion.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli {
namespace {

ProgramSpec Program() {
  ProgramSpec program{.name = "canhazgpu", .aliases = {"chg"}};
  for (const CommandSpec& c : Commands()) {
    if (c.hidden) continue;
    CommandDoc command{.name = c.name,
                       .summary = c.summary,
                       .usage = c.usage,
                       .flags = c.flags,
                       .runs_command = c.name == "run"};
    if (c.name == "completion") command.words = {"bash", "zsh"};
    program.commands.push_back(std::move(command));
  }
  program.global_flags = GlobalFlags();
  program.dynamic = [](const FlagSpec& f) {
    return f.kind == FlagKind::kGpuIds ? std::string("gpu-ids") : std::string();
  };
  return program;
}

std::string ManPageRoff() {
  ManPageText text;
  text.title = "CANHAZGPU";
  text.source = StrCat("canhazgpu ", CANHAZGPU_VERSION_TEXT);
  text.name_line = "canhazgpu, chg \\- share the GPUs of a machine: reserve, run, queue";
  text.description =
      "canhazgpu keeps track of who uses which GPU of a shared machine. "
      "Reservations live in one SQLite file; every command sees the same state.\n";
  text.flag_note = [](const std::string& scope, const FlagSpec& f) {
    const std::string key = OptionKey(scope, f.name);
    return StrCat("Also \\fB", Roff(EnvName(key)), "\\fR, config key \\fB", Roff(key), "\\fR.\n");
  };
  text.trailing = R"sh(.SH CONFIGURATION
Every option is taken from the command line, else the environment
(\fBCANHAZGPU_\fR followed by the key in upper case, with \fB_\fR for \fB.\fR and \fB\-\fR),
else the config file (\fB\-\-config\fR, \fBCANHAZGPU_CONFIG\fR, \fI~/.canhazgpu.yaml\fR or
\fI/etc/canhazgpu/config.yaml\fR; YAML, JSON or TOML), else its default.
An unknown key or a bad value is an error naming the file and line.
\fBcanhazgpu config show\fR prints every value and where it came from.
The setting \fBremote_hosts\fR lists the ssh destinations of \fBstatus \-\-all\fR.
.SH EXIT STATUS
0 success; 1 runtime error; 2 bad flag or value (nothing changed);
3 GPUs not available now (\fB\-\-nonblock\fR, \fB\-\-wait\fR);
\fBrun\fR exits with its command's status, 128+N when a signal N ended it.
.SH FILES
\fI/var/lib/canhazgpu/state.db\fR, the shared state.
)sh";
  return ManPage(Program(), text);
}

absl::Status Completion(Context& ctx, const ParsedFlags& flags) {
  const std::string what = flags.positional.size() == 1 ? flags.positional[0] : "";
  std::string out;
  if (what == "bash") {
    out = BashCompletion(Program());
  } else if (what == "zsh") {
    out = ZshCompletion(Program());
  } else if (what == "gpu-ids") {
    // For the scripts above: the pool's ids, one per line; quiet on failure.
    ASSIGN_OR_RETURN(std::unique_ptr<store::StateStore> store,
                     ctx.open_store(ctx.state_path, false));
    ASSIGN_OR_RETURN(PoolConfig pool, alloc::ReadPool(*store));
    for (int i = 0; i < pool.gpu_count; ++i) out += StrCat(i, "\n");
  } else {
    return absl::InvalidArgumentError("usage: canhazgpu completion bash|zsh");
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return absl::OkStatus();
}

absl::Status Manpage(Context&, const ParsedFlags& flags) {
  if (!flags.positional.empty()) return absl::InvalidArgumentError("usage: canhazgpu manpage");
  std::string out = ManPageRoff();
  std::fwrite(out.data(), 1, out.size(), stdout);
  return absl::OkStatus();
}

}  // namespace

int CompletionCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, {}, "completion", Completion);
}

int ManpageCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, {}, "manpage", Manpage);
}

}  // namespace canhazgpu::cli
