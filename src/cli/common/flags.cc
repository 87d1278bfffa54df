#include "cli/common/flags.h"

#include <algorithm>

#include "core/duration.h"
#include "core/gpu_ids.h"
#include "core/quantity.h"
#include "core/strings.h"

namespace canhazgpu::cli {
namespace {

// "text or json", "nvidia, amd or fake".
std::string ChoiceList(const std::vector<std::string>& choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    out += StrCat(i == 0 ? "" : (i + 1 == choices.size() ? " or " : ", "), choices[i]);
  }
  return out;
}

const FlagSpec* FindLong(const std::vector<FlagSpec>& specs, std::string_view name) {
  for (const FlagSpec& s : specs) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const FlagSpec* FindShort(const std::vector<FlagSpec>& specs, char c) {
  for (const FlagSpec& s : specs) {
    if (s.short_name != 0 && s.short_name == c) return &s;
  }
  return nullptr;
}

absl::Status UnknownFlag(const std::vector<FlagSpec>& specs, std::string_view flag,
                         const std::string& command) {
  std::string_view bare = flag.substr(flag.find_first_not_of('-'));
  bare = bare.substr(0, bare.find('='));
  std::string message =
      StrCat("unknown flag ", flag.substr(0, flag.find('=')), " for '", command, "'");
  const FlagSpec* best = nullptr;
  size_t best_distance = 3;
  for (const FlagSpec& s : specs) {
    size_t d = EditDistance(bare, s.name);
    if (d < best_distance) {
      best = &s;
      best_distance = d;
    }
  }
  if (best != nullptr) message += StrCat(" (did you mean --", best->name, "?)");
  return absl::InvalidArgumentError(message);
}

}  // namespace

absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>& args,
                                       const std::vector<FlagSpec>& specs,
                                       const std::string& command) {
  ParsedFlags out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      out.saw_separator = true;
      out.rest.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-' || (arg[1] >= '0' && arg[1] <= '9')) {
      out.positional.push_back(arg);
      continue;
    }
    const FlagSpec* spec = nullptr;
    std::optional<std::string> inline_value;
    if (arg.starts_with("--")) {
      size_t eq = arg.find('=');
      spec = FindLong(specs, std::string_view(arg).substr(
                                 2, eq == std::string::npos ? std::string::npos : eq - 2));
      if (eq != std::string::npos) inline_value = arg.substr(eq + 1);
    } else {
      spec = FindShort(specs, arg[1]);
      if (arg.size() > 2) inline_value = arg.substr(2);
    }
    if (spec == nullptr || spec->config_only) return UnknownFlag(specs, arg, command);
    if (out.Has(spec->name) && !spec->repeatable) {
      return absl::InvalidArgumentError(StrCat("flag --", spec->name, " given more than once"));
    }
    if (!spec->has_value) {
      if (inline_value) {
        return absl::InvalidArgumentError(StrCat("flag --", spec->name, " takes no value"));
      }
      out.switches[spec->name] = true;
      out.origins[spec->name] = {FlagSource::kCommandLine, StrCat("--", spec->name)};
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size() || args[i + 1] == "--") {
        return absl::InvalidArgumentError(
            StrCat("flag --", spec->name, " needs a value (", spec->value_name, ")"));
      }
      inline_value = args[++i];
    }
    out.values[spec->name] = *inline_value;
    if (spec->repeatable) out.repeated[spec->name].push_back(*inline_value);
    out.origins[spec->name] = {FlagSource::kCommandLine, StrCat("--", spec->name)};
  }
  return out;
}

namespace {

// "  -g, --gpus N" or "      --state PATH".
std::string FlagHelpLeft(const FlagSpec& s) {
  std::string left = s.short_name != 0 ? StrCat("  -", s.short_name, ", ") : std::string("      ");
  left += StrCat("--", s.name);
  if (s.has_value) left += StrCat(" ", s.value_name);
  return left;
}

}  // namespace

size_t FlagHelpColumn(const std::vector<std::vector<FlagSpec>>& lists) {
  size_t widest = 0;
  for (const std::vector<FlagSpec>& specs : lists) {
    for (const FlagSpec& s : specs) {
      if (!s.config_only) widest = std::max(widest, FlagHelpLeft(s).size());
    }
  }
  return widest + 2;
}

std::string FlagHelp(const std::vector<FlagSpec>& specs, size_t column) {
  if (column == 0) column = FlagHelpColumn({specs});
  std::string out;
  for (const FlagSpec& s : specs) {
    if (s.config_only) continue;
    std::string left = FlagHelpLeft(s);
    // Never less than two spaces, even when a caller's column is too narrow.
    left.append(left.size() + 2 > column ? 2 : column - left.size(), ' ');
    out += StrCat(left, s.help,
                  s.default_value.empty() ? "" : StrCat(" (default ", s.default_value, ")"), "\n");
  }
  return out;
}

absl::Status CheckFlagValue(const FlagSpec& spec, const std::string& value) {
  // A NUL would silently end the value wherever it is passed on as a C
  // string (a note stored in SQLite, a selector); argv and the environment
  // cannot hold one, but a config file's "\u0000" can.
  if (value.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("contains a NUL byte");
  }
  switch (spec.kind) {
    case FlagKind::kText:
    case FlagKind::kList:
      return absl::OkStatus();
    case FlagKind::kCount:
    case FlagKind::kPositiveInt: {
      const int64_t min = spec.kind == FlagKind::kCount ? 0 : 1;
      int64_t n = 0;
      if (ParseInt(value, &n) && n >= min && n <= spec.max) return absl::OkStatus();
      return absl::InvalidArgumentError(StrCat("expected an integer from ", min, " to ", spec.max));
    }
    case FlagKind::kDuration:
      return ParseDuration(value).status();
    case FlagKind::kGpuIds:
      if (auto ids = ParseGpuIds(value); !ids.ok()) return ids.status();
      return absl::OkStatus();
    case FlagKind::kChoice:
      if (std::find(spec.choices.begin(), spec.choices.end(), value) != spec.choices.end()) {
        return absl::OkStatus();
      }
      return absl::InvalidArgumentError(StrCat("expected ", ChoiceList(spec.choices)));
    case FlagKind::kQuantity: {
      absl::StatusOr<int64_t> bytes = QuantityValue(value);
      if (!bytes.ok()) return bytes.status();
      if (*bytes < 0) return absl::InvalidArgumentError("expected a quantity of at least 0");
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ParseSwitch(const std::string& value) {
  if (value == "true" || value == "yes" || value == "on" || value == "1") return true;
  if (value == "false" || value == "no" || value == "off" || value == "0") return false;
  return absl::InvalidArgumentError("expected true or false");
}

absl::StatusOr<int> PositiveInt(const std::string& flag, const std::string& value) {
  int n = 0;
  if (!ParseInt(value, &n) || n < 1) {
    return absl::InvalidArgumentError(
        StrCat("invalid value '", value, "' for --", flag, ": expected a positive integer"));
  }
  return n;
}

absl::StatusOr<std::vector<std::string>> CommandFirst(const std::vector<std::string>& args,
                                                      const std::vector<FlagSpec>& globals,
                                                      const std::string& program) {
  std::vector<std::string> leading;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-' || arg == "--") break;
    if (arg == "--help" || arg == "-h" || arg == "--version") return args;
    const bool is_long = arg[1] == '-';
    const std::string name = is_long ? arg.substr(2, arg.find('=') - 2) : arg.substr(1);
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& g : globals) {
      if (g.config_only) continue;
      if (is_long ? g.name == name : (name.size() == 1 && g.short_name == name[0])) spec = &g;
    }
    if (spec == nullptr) {
      return absl::InvalidArgumentError(
          StrCat("unknown flag '", arg, "' before the command; only global flags may come first (",
                 program, " --help lists them)"));
    }
    leading.push_back(arg);
    if (spec->has_value && arg.find('=') == std::string::npos) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(StrCat("flag '", arg, "' needs a value"));
      }
      leading.push_back(args[++i]);
    }
  }
  if (i == 0 || i >= args.size() || args[i] == "--") return args;
  std::vector<std::string> out = {args[i]};
  out.insert(out.end(), leading.begin(), leading.end());
  out.insert(out.end(), args.begin() + static_cast<ptrdiff_t>(i) + 1, args.end());
  return out;
}

}  // namespace canhazgpu::cli
