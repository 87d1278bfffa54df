#include "cli/common/option_layers.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "core/strings.h"

namespace canhazgpu::cli {
namespace {

const config::ConfigValue* FindInFile(const config::ConfigFile& file, const std::string& key,
                                      std::string* written_key) {
  const std::string wanted = EnvName(key);
  for (const auto& [name, value] : file.values) {
    if (EnvName(name) == wanted) {
      *written_key = name;
      return &value;
    }
  }
  return nullptr;
}

std::string FileWhere(const config::ConfigFile& file, const config::ConfigValue& value) {
  return value.line > 0 ? StrCat(file.path, ":", value.line) : file.path;
}

// Turns one config file value into the flag's text form ("" with *on=false
// for a switch that is off).
absl::StatusOr<std::string> FileValueText(const FlagSpec& spec, const config::ConfigValue& value) {
  if (value.is_list) {
    if (spec.kind != FlagKind::kList) {
      return absl::InvalidArgumentError("expected a single value, not a list");
    }
    return Join(value.list, ",");
  }
  return value.text;
}

// Checks `text` for `spec` and stores it (switches: only when true).
absl::Status Store(const FlagSpec& spec, const std::string& text, FlagOrigin origin,
                   ParsedFlags& flags) {
  if (!spec.has_value) {
    absl::StatusOr<bool> on = ParseSwitch(text);
    if (!on.ok()) return on.status();
    if (*on) flags.switches[spec.name] = true;
  } else {
    if (absl::Status s = CheckFlagValue(spec, text); !s.ok()) return s;
    flags.values[spec.name] = text;
  }
  flags.origins[spec.name] = std::move(origin);
  return absl::OkStatus();
}

// Parser messages quote the value themselves ("invalid duration '5x': ...");
// a value with a NUL byte is not echoed at all.
bool QuotesValue(const absl::Status& why) {
  const std::string m(why.message());
  return m.starts_with("invalid ") || m.starts_with("duplicate ") || m.starts_with("contains ");
}

absl::Status BadValue(const std::string& where, const std::string& key, const std::string& text,
                      const absl::Status& why) {
  if (QuotesValue(why))
    return absl::InvalidArgumentError(StrCat(where, ": ", key, ": ", why.message()));
  return absl::InvalidArgumentError(
      StrCat(where, ": ", key, ": invalid value '", text, "': ", why.message()));
}

}  // namespace

std::string OptionKey(std::string_view scope, std::string_view flag) {
  return scope.empty() ? std::string(flag) : StrCat(scope, ".", flag);
}

std::string EnvName(std::string_view key, std::string_view prefix) {
  std::string out = StrCat(prefix, absl::AsciiStrToUpper(std::string(key)));
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c == '.' || c == '-'; }, '_');
  return out;
}

absl::Status ApplyOptionLayers(const OptionScope& scope, const OptionSources& sources,
                               ParsedFlags& flags) {
  for (const FlagSpec& spec : scope.specs) {
    const std::string key = OptionKey(scope.scope, spec.name);
    if (auto it = flags.values.find(spec.name); it != flags.values.end()) {
      if (absl::Status s = CheckFlagValue(spec, it->second); !s.ok()) {
        if (QuotesValue(s))
          return absl::InvalidArgumentError(StrCat(s.message(), " (--", spec.name, ")"));
        return absl::InvalidArgumentError(
            StrCat("invalid value '", it->second, "' for --", spec.name, ": ", s.message()));
      }
      continue;
    }
    if (flags.switches.contains(spec.name)) continue;
    const std::string env_name = EnvName(key, sources.env_prefix);
    if (std::optional<std::string> env = sources.getenv ? sources.getenv(env_name) : std::nullopt;
        env && !env->empty()) {
      if (absl::Status s = Store(spec, *env, {FlagSource::kEnvironment, env_name}, flags);
          !s.ok()) {
        if (QuotesValue(s)) return absl::InvalidArgumentError(StrCat(env_name, ": ", s.message()));
        return absl::InvalidArgumentError(
            StrCat(env_name, ": invalid value '", *env, "': ", s.message()));
      }
      continue;
    }
    std::string written_key;
    const config::ConfigValue* value =
        sources.file != nullptr ? FindInFile(*sources.file, key, &written_key) : nullptr;
    if (value != nullptr) {
      const std::string where = FileWhere(*sources.file, *value);
      absl::StatusOr<std::string> text = FileValueText(spec, *value);
      absl::Status s =
          text.ok() ? Store(spec, *text, {FlagSource::kConfigFile, where}, flags) : text.status();
      if (!s.ok()) return BadValue(where, written_key, text.ok() ? *text : "[...]", s);
      continue;
    }
    if (spec.has_value && !spec.default_value.empty()) {
      flags.values[spec.name] = spec.default_value;
      flags.origins[spec.name] = {FlagSource::kDefault, "default"};
    }
  }
  // A higher layer's flag beats a lower layer's contradicting one.
  for (const FlagSpec& spec : scope.specs) {
    if (spec.overrides.empty() || !flags.Has(spec.name) || !flags.Has(spec.overrides)) continue;
    FlagSource mine = flags.origins[spec.name].source;
    FlagSource theirs = flags.origins[spec.overrides].source;
    if (mine > theirs) flags.Erase(spec.overrides);
    if (theirs > mine) flags.Erase(spec.name);
  }
  return absl::OkStatus();
}

absl::Status CheckConfigFile(const config::ConfigFile& file,
                             const std::vector<OptionScope>& scopes) {
  for (const auto& [key, value] : file.values) {
    const std::string wanted = EnvName(key);
    const FlagSpec* match = nullptr;
    for (const OptionScope& scope : scopes) {
      for (const FlagSpec& spec : scope.specs) {
        if (EnvName(OptionKey(scope.scope, spec.name)) == wanted) match = &spec;
      }
    }
    const std::string where = FileWhere(file, value);
    if (match == nullptr) {
      // Only now, for the message: the nearest option by spelling.
      std::string best;
      size_t best_distance = 4;
      for (const OptionScope& scope : scopes) {
        for (const FlagSpec& spec : scope.specs) {
          std::string option = OptionKey(scope.scope, spec.name);
          if (size_t d = EditDistance(key, option); d < best_distance) {
            best = option;
            best_distance = d;
          }
        }
      }
      return absl::InvalidArgumentError(StrCat(where, ": unknown key '", key, "'",
                                               best.empty()
                                                   ? std::string(" (see 'canhazgpu config show')")
                                                   : StrCat(" (did you mean '", best, "'?)")));
    }
    absl::StatusOr<std::string> text = FileValueText(*match, value);
    absl::Status s =
        text.ok() ? (match->has_value ? CheckFlagValue(*match, *text) : ParseSwitch(*text).status())
                  : text.status();
    if (!s.ok()) return BadValue(where, key, text.ok() ? *text : "[...]", s);
  }
  return absl::OkStatus();
}

std::string DescribeOrigin(const FlagOrigin& origin) {
  switch (origin.source) {
    case FlagSource::kDefault:
      return "default";
    case FlagSource::kCommandLine:
      return "command line";
    case FlagSource::kEnvironment:
    case FlagSource::kConfigFile:
      return origin.where;
  }
  return origin.where;
}

}  // namespace canhazgpu::cli
