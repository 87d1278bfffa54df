// canhazgpu devices [--json | -o yaml|json]: the host's GPUs and MIG
// instances as DRA devices - the resource.k8s.io/v1 ResourceSlice the node
// driver publishes - so users see the attributes --where selectors test.
#include <cstdio>

#include "alloc/reservations.h"
#include "cli/canhazgpu/commands.h"
#include "cli/common/table.h"
#include "cli/common/yaml_output.h"
#include "core/json_text.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "dra/devices.h"
#include "host/self_executable.h"

namespace canhazgpu::cli {
namespace {

const std::vector<FlagSpec> kDevicesFlags = {
    {.name = "json", .short_name = 'j', .help = "the ResourceSlice as JSON"},
    {.name = "output",
     .short_name = 'o',
     .has_value = true,
     .value_name = "FORMAT",
     .help = "table, json or yaml",
     .default_value = "table"},
};

std::string Attr(const dra::Device& d, const std::string& name) {
  auto it = d.attributes.find(name);
  return it == d.attributes.end() ? "" : it->second.ToString();
}

std::string DevicesTable(const dra::DevicePool& pool, bool color) {
  if (pool.devices.empty()) return "No devices.\n";
  cli::Table table({"DEVICE", "TYPE", "PRODUCT", "MEMORY", "PROFILE", "COMPUTE", "UUID"},
                   MakeStyle(color, "1;36"));
  for (const dra::Device& d : pool.devices) {
    table.AddRow({{d.name},
                  {Attr(d, "type")},
                  {Attr(d, "productName")},
                  {dra::FormatQuantity(d.capacity.count("memory") ? d.capacity.at("memory") : 0)},
                  {Attr(d, "profile")},
                  {Attr(d, "cudaComputeCapability")},
                  {Attr(d, "uuid")}});
  }
  return table.Render();
}

absl::Status Devices(Context& ctx, const ParsedFlags& flags) {
  if (!flags.positional.empty()) {
    return absl::InvalidArgumentError(
        StrCat("unexpected argument '", flags.positional[0], "' for 'devices'"));
  }
  std::string format = *flags.Value("output");
  if (flags.Has("json")) {
    if (flags.origins.count("output") && flags.origins.at("output").where != "default" &&
        format != "json") {
      return absl::InvalidArgumentError("--json and --output " + format + ": choose one");
    }
    format = "json";
  }
  if (format != "table" && format != "json" && format != "yaml") {
    return absl::InvalidArgumentError(
        StrCat("--output: expected table, json or yaml, got '", format, "'"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<store::StateStore> store, ctx.open_store(ctx.state_path, false));
  ASSIGN_OR_RETURN(PoolConfig pool, alloc::ReadPool(*store));
  std::vector<GpuInfo> gpus = QueryGpus(ctx, pool);
  dra::DevicePool devices = dra::BuildDevicePool(gpus, host::HostName());
  // Unreadable GPUs are not devices; say why rather than leave them out.
  for (const GpuInfo& g : gpus) {
    if (g.error.empty()) continue;
    if (devices.devices.empty())
      return absl::UnavailableError(StrCat("gpu ", g.index, ": ", g.error));
    std::fprintf(stderr, "canhazgpu: gpu %d left out: %s\n", g.index, g.error.c_str());
  }
  std::string out;
  if (format == "table") {
    out = DevicesTable(devices, ColorEnabled(ctx.no_color));
  } else if (format == "json") {
    out = DumpJson(dra::ResourceSliceJson(devices), 2) + "\n";
  } else {
    // Product names come from the driver or a simulated-host file.
    out = ToYaml(dra::ResourceSliceJson(devices));
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> DevicesFlags() { return kDevicesFlags; }

int DevicesCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, kDevicesFlags, "devices", Devices);
}

}  // namespace canhazgpu::cli
