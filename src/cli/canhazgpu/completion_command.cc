// canhazgpu completion bash|zsh: shell completion for commands, flags and
// GPU ids, generated from the command table so it cannot go stale (the
// tool we replace shipped a hand-written script missing half its flags).
// `canhazgpu manpage` (hidden) prints the man page, made at build time.
#include <cstdio>

#include "alloc/reservations.h"
#include "cli/canhazgpu/commands.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli {
namespace {

std::vector<FlagSpec> VisibleFlags(const CommandSpec& c) {
  std::vector<FlagSpec> out;
  for (const std::vector<FlagSpec>* list : {&c.flags, &GlobalFlags()}) {
    for (const FlagSpec& f : *list) {
      if (!f.config_only) out.push_back(f);
    }
  }
  return out;
}

std::string FlagWords(const CommandSpec& c) {
  std::vector<std::string> words;
  for (const FlagSpec& f : VisibleFlags(c)) {
    words.push_back(StrCat("--", f.name));
    if (f.short_name != 0) words.push_back(StrCat("-", f.short_name));
  }
  return Join(words, " ");
}

bool IsGpuIds(const FlagSpec& f) { return f.kind == FlagKind::kGpuIds; }
bool IsFile(const FlagSpec& f) {
  return f.value_name == "FILE" || f.value_name == "PATH" || f.value_name == "PROGRAM";
}

std::string Bash() {
  std::string commands, per_command, value_flags, id_flags, file_flags;
  std::vector<std::string> values, ids, files;
  for (const CommandSpec& c : Commands()) {
    if (c.hidden) continue;
    commands += c.name + " ";
    per_command += StrCat("    ", c.name, ") flags=\"", FlagWords(c), "\" ;;\n");
    for (const FlagSpec& f : VisibleFlags(c)) {
      if (!f.has_value) continue;
      auto& list = IsGpuIds(f) ? ids : IsFile(f) ? files : values;
      list.push_back(StrCat("--", f.name));
      if (f.short_name != 0) list.push_back(StrCat("-", f.short_name));
    }
  }
  auto alternatives = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return Join(v, "|");
  };
  return StrCat(R"sh(# bash completion for canhazgpu and chg: source <(canhazgpu completion bash)
_canhazgpu() {
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
                alternatives(ids), R"sh()
      COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" completion gpu-ids 2>/dev/null)" -- "$cur"))
      return ;;
    )sh",
                alternatives(files), R"sh()
      COMPREPLY=($(compgen -f -- "$cur"))
      return ;;
    )sh",
                alternatives(values), R"sh()
      return ;;
  esac
  case "${COMP_WORDS[1]}" in
)sh",
                per_command, R"sh(    completion) flags="bash zsh" ;;
    *) return ;;
  esac
  COMPREPLY=($(compgen -W "$flags" -- "$cur"))
}
complete -F _canhazgpu canhazgpu chg
)sh");
}

std::string ZshQuote(std::string text) {
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

std::string Zsh() {
  std::string out = R"sh(#compdef canhazgpu chg
# zsh completion for canhazgpu: canhazgpu completion zsh > "${fpath[1]}/_canhazgpu"
_canhazgpu_gpu_ids() {
  local -a ids
  ids=(${(f)"$(${words[1]} completion gpu-ids 2>/dev/null)"})
  _values -s , 'GPU id' $ids
}
_canhazgpu() {
  local -a commands
  commands=(
)sh";
  for (const CommandSpec& c : Commands()) {
    if (!c.hidden) out += StrCat("    '", c.name, ":", ZshQuote(c.summary), "'\n");
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
  for (const CommandSpec& c : Commands()) {
    if (c.hidden) continue;
    out += StrCat("    ", c.name, ")\n      _arguments -s");
    for (const FlagSpec& f : VisibleFlags(c)) {
      std::string action = !f.has_value  ? ""
                           : IsGpuIds(f) ? StrCat(":", f.value_name, ":_canhazgpu_gpu_ids")
                           : IsFile(f)   ? StrCat(":", f.value_name, ":_files")
                                         : StrCat(":", f.value_name, ": ");
      std::string help = ZshQuote(f.help);
      out += StrCat(" \\\n        '--", f.name, "[", help, "]", action, "'");
      if (f.short_name != 0)
        out += StrCat(" \\\n        '-", f.short_name, "[", help, "]", action, "'");
    }
    if (c.name == "run") out += " \\\n        '*::command:_normal'";
    if (c.name == "completion") out += " \\\n        '1:shell:(bash zsh)'";
    out += " ;;\n";
  }
  out += R"sh(  esac
}
_canhazgpu "$@"
)sh";
  return out;
}

// Text for roff: backslashes doubled, a leading dot or quote neutralised.
std::string Roff(const std::string& text) {
  std::string out;
  for (char c : text)
    out += c == '\\' ? std::string("\\e") : c == '-' ? std::string("\\-") : std::string(1, c);
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

// Each flag as a tagged paragraph, with its variable and config key.
std::string FlagsRoff(const std::string& scope, const std::vector<FlagSpec>& flags) {
  std::string out;
  for (const FlagSpec& f : flags) {
    if (f.config_only) continue;
    out += ".TP\n";
    if (f.short_name != 0) out += StrCat("\\fB\\-", f.short_name, "\\fR, ");
    out += StrCat("\\fB\\-\\-", Roff(f.name), "\\fR");
    if (f.has_value) out += StrCat(" \\fI", Roff(f.value_name), "\\fR");
    out += StrCat("\n", Roff(f.help));
    if (!f.default_value.empty()) out += StrCat(" (default ", Roff(f.default_value), ")");
    const std::string key = OptionKey(scope, f.name);
    out +=
        StrCat(".\nAlso \\fB", Roff(EnvName(key)), "\\fR, config key \\fB", Roff(key), "\\fR.\n");
  }
  return out;
}

std::string ManPage() {
  std::string out = StrCat(
      ".TH CANHAZGPU 1 \"\" \"canhazgpu ", CANHAZGPU_VERSION_TEXT, "\" \"User Commands\"\n",
      ".SH NAME\ncanhazgpu, chg \\- share the GPUs of a machine: reserve, run, queue\n",
      ".SH SYNOPSIS\n\\fBcanhazgpu\\fR \\fICOMMAND\\fR [\\fIflags\\fR]\n", ".SH DESCRIPTION\n",
      "canhazgpu keeps track of who uses which GPU of a shared machine. ",
      "Reservations live in one SQLite file; every command sees the same state.\n",
      ".SH COMMANDS\n");
  for (const CommandSpec& c : Commands()) {
    if (c.hidden) continue;
    out += StrCat(".SS \"canhazgpu ", c.name, " ", Roff(c.usage), "\"\n", Roff(c.summary), ".\n");
    out += FlagsRoff(c.name, c.flags);
  }
  out += StrCat(".SH GLOBAL FLAGS\n", FlagsRoff("", GlobalFlags()));
  out += R"sh(.SH CONFIGURATION
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
  return out;
}

absl::Status Completion(Context& ctx, const ParsedFlags& flags) {
  const std::string what = flags.positional.size() == 1 ? flags.positional[0] : "";
  std::string out;
  if (what == "bash") {
    out = Bash();
  } else if (what == "zsh") {
    out = Zsh();
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
  std::string out = ManPage();
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
