#include "cli/k8shazgpu_sim/fake_nvidia_plugin.h"

#include <filesystem>

#include "core/file_write.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "driver/cdi_spec.h"
#include "driver/claim_allocation.h"
#include "driver/slice_publisher.h"
#include "gpu/fake_host.h"
#include "kube/json_object.h"
#include "kube/objects_resource.h"

namespace canhazgpu::sim {
namespace {

using nlohmann::json;

const dra::Device* FindDevice(const dra::DevicePool& pool, const std::string& name) {
  for (const dra::Device& d : pool.devices) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::string StringAttribute(const dra::Device& d, const std::string& name) {
  auto it = d.attributes.find(name);
  return it == d.attributes.end() ? "" : it->second.string_value;
}

std::string CdiDeviceName(const std::string& claim_uid, const std::string& device) {
  return StrCat(claim_uid, "-", device);
}

}  // namespace

absl::StatusOr<std::unique_ptr<FakeNvidiaPlugin>> FakeNvidiaPlugin::Start(
    const kube::RestConfig& config, FakeNvidiaPluginOptions options) {
  std::unique_ptr<FakeNvidiaPlugin> plugin(new FakeNvidiaPlugin(std::move(options)));
  ASSIGN_OR_RETURN(
      plugin->client_,
      kube::Client::Create(
          config, {.user_agent = kube::UserAgent("fake-nvidia-dra"), .qps = 100, .burst = 100}));
  gpu::FakeGpuProvider host(plugin->options_.host_file);
  ASSIGN_OR_RETURN(std::vector<GpuInfo> gpus, host.Query());
  // NVIDIA keeps no margin back and publishes no isolation of its own.
  plugin->pool_ =
      dra::BuildDevicePool(gpus, plugin->options_.node_name,
                           {.sharing = plugin->options_.consumable_shares, .reserved_bytes = 0});
  for (dra::Device& device : plugin->pool_.devices) {
    device.attributes.erase(dra::kMemoryIsolationAttribute);
  }
  plugin->pool_.driver = kNvidiaDriverName;
  RETURN_IF_ERROR(plugin->PublishSlices());
  ASSIGN_OR_RETURN(plugin->server_, kubeletplugin::PluginServer::Start(
                                        {.driver_name = kNvidiaDriverName,
                                         .registrar_dir = plugin->options_.registrar_dir,
                                         .plugin_dir = plugin->options_.plugin_dir},
                                        *plugin, /*health=*/nullptr));
  return plugin;
}

FakeNvidiaPlugin::~FakeNvidiaPlugin() { Stop(); }

void FakeNvidiaPlugin::Stop() {
  if (server_) server_->Shutdown();
}

absl::Status FakeNvidiaPlugin::PublishSlices() {
  driver::NodeDevices devices{.pool = pool_};
  // Owned by the Node, as real drivers' slices are, when it is there.
  absl::StatusOr<json> node = client_->Get(kube::kNodes, "", options_.node_name);
  if (node.ok()) devices.node_uid = kube::StringAt(*node, "/metadata/uid"_json_pointer);
  driver::SlicePublisher publisher(*client_);
  absl::StatusOr<driver::PublishResult> published = publisher.Publish(devices);
  if (!published.ok()) {
    return absl::Status(
        published.status().code(),
        StrCat("fake NVIDIA plugin on ", options_.node_name,
               ": cannot publish its ResourceSlices: ", published.status().message()));
  }
  options_.log(StrCat("fake NVIDIA plugin: published ", pool_.devices.size(), " devices in ",
                      published->slices, " slices"));
  return absl::OkStatus();
}

std::string FakeNvidiaPlugin::CdiSpecFileName(const std::string& claim_uid) {
  return StrCat("k8s.gpu.nvidia.com-device_", claim_uid, ".json");
}

json FakeNvidiaPlugin::CdiSpec(const std::string& claim_uid,
                               const std::vector<driver::CdiDevice>& devices) {
  json cdi_devices = json::array();
  for (const driver::CdiDevice& d : devices) {
    cdi_devices.push_back(
        {{"name", CdiDeviceName(claim_uid, d.name)},
         {"containerEdits", {{"deviceNodes", {{{"path", StrCat("/dev/nvidia", d.gpu_minor)}}}}}}});
  }
  // As the container toolkit numbers a container's GPUs, per request: a
  // container sees only the devices of the requests it names.
  for (const driver::RequestEnvironment& r : driver::RequestEnvironments(devices)) {
    cdi_devices.push_back({{"name", driver::RequestEnvDeviceName(claim_uid, r.request)},
                           {"containerEdits", {{"env", r.env}}}});
  }
  return {{"cdiVersion", driver::kCdiVersion},
          {"kind", kNvidiaCdiKind},
          {"devices", cdi_devices},
          {"containerEdits", {{"deviceNodes", {{{"path", "/dev/nvidiactl"}}}}}}};
}

driver::PrepareResult FakeNvidiaPlugin::Prepare(const driver::ClaimRef& ref) {
  const std::string id = StrCat("claim ", ref.namespace_name, "/", ref.name);
  absl::StatusOr<json> object = client_->Get(kube::kResourceClaims, ref.namespace_name, ref.name);
  if (!object.ok()) return {.error = StrCat("cannot read ", id, ": ", object.status().message())};
  absl::StatusOr<kube::ResourceClaim> claim = kube::ResourceClaim::FromJson(*object);
  if (!claim.ok()) return {.error = StrCat("cannot read ", id, ": ", claim.status().message())};
  absl::StatusOr<driver::ClaimAllocation> allocation =
      driver::OurAllocation(*claim, ref.uid, kNvidiaDriverName, pool_.pool);
  if (!allocation.ok()) return {.error = std::string(allocation.status().message())};
  std::vector<driver::CdiDevice> devices;
  driver::PrepareResult result;
  for (const driver::AllocatedDevice& a : allocation->devices) {
    const dra::Device* d = FindDevice(pool_, a.device);
    if (d == nullptr) {
      return {.error = StrCat(id, ": device ", a.device, " is not on node ", pool_.pool)};
    }
    const auto minor = d->attributes.find("minor");
    devices.push_back({.name = d->name,
                       .uuid = StringAttribute(*d, "uuid"),
                       .gpu_minor = minor != d->attributes.end()
                                        ? static_cast<int>(minor->second.int_value)
                                        : d->gpu_index,
                       .is_mig = d->is_mig,
                       .requests = a.requests});
    std::vector<std::string> ids = {StrCat(kNvidiaCdiKind, "=", CdiDeviceName(ref.uid, a.device))};
    std::vector<std::string> requests = driver::BaseRequestNames(a.requests);
    if (requests.empty()) requests.push_back("");
    for (const std::string& r : requests) {
      ids.push_back(StrCat(kNvidiaCdiKind, "=", driver::RequestEnvDeviceName(ref.uid, r)));
    }
    result.devices.push_back({.request_names = driver::BaseRequestNames(a.requests),
                              .pool = pool_.pool,
                              .device = a.device,
                              .cdi_device_ids = std::move(ids)});
  }
  const std::string path = StrCat(options_.cdi_dir, "/", CdiSpecFileName(ref.uid));
  if (absl::Status s = WriteFileAtomically(path, CdiSpec(ref.uid, devices).dump(2) + "\n", 0644);
      !s.ok()) {
    return {.error = StrCat(id, ": cannot write its CDI spec: ", s.message())};
  }
  return result;
}

std::map<std::string, driver::PrepareResult> FakeNvidiaPlugin::PrepareClaims(
    const std::vector<driver::ClaimRef>& claims, const driver::CallBounds& /*bounds*/) {
  std::map<std::string, driver::PrepareResult> out;
  for (const driver::ClaimRef& ref : claims) out[ref.uid] = Prepare(ref);
  return out;
}

std::map<std::string, std::string> FakeNvidiaPlugin::UnprepareClaims(
    const std::vector<driver::ClaimRef>& claims, const driver::CallBounds& /*bounds*/) {
  std::map<std::string, std::string> out;
  for (const driver::ClaimRef& ref : claims) {
    std::error_code ec;
    std::filesystem::remove(StrCat(options_.cdi_dir, "/", CdiSpecFileName(ref.uid)), ec);
    out[ref.uid] = ec ? StrCat("cannot remove the CDI spec of claim ", ref.namespace_name, "/",
                               ref.name, ": ", ec.message())
                      : "";
  }
  return out;
}

}  // namespace canhazgpu::sim
