// canhazgpu config show [--json]: every option of every command, its
// effective value and the layer it came from (command line, environment,
// config file with line, default), so a surprising value can be traced.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/canhazgpu/commands.h"
#include "cli/common/table.h"
#include "core/json_text.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli {
namespace {

const std::vector<FlagSpec> kConfigFlags = {
    {.name = "json", .short_name = 'j', .help = "JSON output"},
};

struct ShownOption {
  std::string key;
  std::string value;  // "" when unset
  bool is_set = false;
  FlagOrigin origin;
};

ShownOption Show(const std::string& scope, const FlagSpec& spec, const ParsedFlags& flags) {
  ShownOption shown{.key = OptionKey(scope, spec.name)};
  if (spec.has_value) {
    if (auto v = flags.Value(spec.name)) {
      shown.value = *v;
      shown.is_set = true;
    }
  } else {
    shown.value = flags.Has(spec.name) ? "true" : "false";
    shown.is_set = true;
  }
  if (auto it = flags.origins.find(spec.name); it != flags.origins.end()) shown.origin = it->second;
  return shown;
}

absl::Status ConfigShow(Context& ctx, const ParsedFlags& flags) {
  if (flags.positional.size() != 1 || flags.positional[0] != "show") {
    return absl::InvalidArgumentError("usage: canhazgpu config show [--json]");
  }
  OptionSources sources{.file = ctx.config ? &*ctx.config : nullptr, .getenv = ctx.getenv};
  std::vector<ShownOption> shown;
  for (const FlagSpec& spec : SettingFlags()) shown.push_back(Show("", spec, flags));
  for (const CommandSpec& command : Commands()) {
    ParsedFlags layered;
    RETURN_IF_ERROR(ApplyOptionLayers({command.name, command.flags}, sources, layered));
    for (const FlagSpec& spec : command.flags) shown.push_back(Show(command.name, spec, layered));
  }
  const std::string file = ctx.config ? ctx.config->path : "";
  if (flags.Has("json")) {
    nlohmann::json options = nlohmann::json::object();
    for (const ShownOption& o : shown) {
      options[o.key] = {{"value", o.is_set ? nlohmann::json(o.value) : nlohmann::json(nullptr)},
                        {"source", DescribeOrigin(o.origin)},
                        {"env", EnvName(o.key)}};
    }
    nlohmann::json out = {
        {"config_file", file.empty() ? nlohmann::json(nullptr) : nlohmann::json(file)},
        {"options", options}};
    std::printf("%s\n", DumpJson(out, 2).c_str());
    return absl::OkStatus();
  }
  if (file.empty()) {
    std::printf("config file: none (looked for %s)\n\n",
                Join(DefaultConfigPaths(ctx), ", ").c_str());
  } else {
    std::printf("config file: %s\n\n", file.c_str());
  }
  const bool color = ColorEnabled(ctx.no_color);
  Table table({"OPTION", "VALUE", "SOURCE"}, MakeStyle(color, "1;36"));
  const Style dim = MakeStyle(color, "2");
  for (const ShownOption& o : shown) {
    const bool is_default = o.origin.source == FlagSource::kDefault;
    table.AddRow({{o.key},
                  {o.is_set ? o.value : "-", o.is_set ? Style{} : dim},
                  {DescribeOrigin(o.origin), is_default ? dim : Style{}}});
  }
  std::string out = table.Render();
  std::fwrite(out.data(), 1, out.size(), stdout);
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> ConfigFlags() { return kConfigFlags; }

int ConfigCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, kConfigFlags, "config", ConfigShow);
}

}  // namespace canhazgpu::cli
