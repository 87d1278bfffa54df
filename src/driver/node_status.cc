#include "driver/node_status.h"

#include <map>

#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::driver {
namespace {

using nlohmann::json;

const char* StateOf(const alloc::GpuStatus& s) {
  switch (s.state) {
    case alloc::GpuState::kAvailable:
      return "Free";
    case alloc::GpuState::kInUse:
      return s.reservation && s.reservation->kind == ReservationKind::kK8s ? "Prepared" : "Held";
    case alloc::GpuState::kUnreserved:
    case alloc::GpuState::kError:  // not known to be free
      return "InUse";
  }
  return "InUse";
}

json Usage(const alloc::GpuStatus& s) {
  json processes = json::array();
  json users = json::array();
  for (const alloc::ProcessUsage& p : s.processes) {
    if (processes.size() < 256) {
      processes.push_back({{"pid", p.pid},
                           {"user", p.user},
                           {"command", std::string(Utf8Prefix(p.command, 256))},
                           {"memoryBytes", p.used_memory_bytes}});
    }
    if (std::find(users.begin(), users.end(), p.user) == users.end()) users.push_back(p.user);
  }
  json usage = {{"memoryUsedBytes", s.info ? s.info->memory_used_bytes : 0}};
  if (!users.empty()) usage["users"] = users;
  if (!processes.empty()) usage["processes"] = processes;
  return usage;
}

}  // namespace

json NodeGpuStatusObject(const std::string& node, const std::string& node_uid, const NodeView& view,
                         TimePoint now) {
  std::map<int, const alloc::GpuStatus*> by_gpu;
  for (const alloc::GpuStatus& s : view.statuses) by_gpu[s.gpu] = &s;
  json devices = json::array();
  std::map<std::string, int> summary = {{"total", 0},    {"free", 0},  {"held", 0},
                                        {"prepared", 0}, {"inUse", 0}, {"tainted", 0}};
  for (const dra::Device& d : view.devices.pool.devices) {
    json device = {{"name", d.name}, {"type", d.is_mig ? "mig" : "gpu"}};
    if (const std::string uuid = d.StringAttribute("uuid"); !uuid.empty()) device["uuid"] = uuid;
    if (!d.is_mig) device["index"] = d.gpu_index;
    if (const std::string product = d.StringAttribute("productName"); !product.empty()) {
      device["productName"] = product;
    }
    auto status = by_gpu.find(d.gpu_index);
    const char* state = status == by_gpu.end() ? "InUse" : StateOf(*status->second);
    device["state"] = state;
    if (status != by_gpu.end()) {
      const alloc::GpuStatus& s = *status->second;
      if (std::string(state) == "Held") {
        device["held"] = {{"user", s.reservation->user},
                          {"kind", s.reservation->kind == ReservationKind::kRun ? "Run" : "Manual"},
                          {"since", FormatTimestampSeconds(s.reservation->start)}};
        if (s.reservation->expires) {
          device["held"]["until"] = FormatTimestampSeconds(*s.reservation->expires);
        }
      }
      if (std::string(state) == "Prepared" && s.reservation->claim) {
        const KubeClaimRef& c = *s.reservation->claim;
        json claim = {{"namespace", c.namespace_name}, {"name", c.name}, {"uid", c.uid}};
        if (!c.pod.empty()) claim["pods"] = {c.pod};
        device["claims"] = json::array({claim});
      }
      if (!s.processes.empty()) device["usage"] = Usage(s);
    }
    if (auto t = view.devices.taints.find(d.name); t != view.devices.taints.end()) {
      json taints = json::array();
      for (const Taint& taint : t->second) {
        json j = {{"key", taint.key}, {"effect", taint.effect}, {"source", "Driver"}};
        if (!taint.value.empty()) j["value"] = taint.value;
        taints.push_back(std::move(j));
      }
      if (!taints.empty()) {
        device["taints"] = taints;
        ++summary["tainted"];
      }
    }
    ++summary["total"];
    const std::string s = state;
    ++summary[s == "Free" ? "free" : s == "Held" ? "held" : s == "Prepared" ? "prepared" : "inUse"];
    devices.push_back(std::move(device));
  }
  json object = {
      {"apiVersion", "canhazgpu.dev/v1alpha1"},
      {"kind", "NodeGpuStatus"},
      {"metadata", {{"name", node}}},
      {"spec", {{"nodeName", node}}},
      {"status",
       {{"updateTime", FormatTimestampSeconds(now)}, {"summary", summary}, {"devices", devices}}}};
  if (!view.driver_version.empty()) object["status"]["driverVersion"] = view.driver_version;
  if (!node_uid.empty()) {
    object["metadata"]["ownerReferences"] = {
        {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}, {"uid", node_uid}}};
  }
  return object;
}

absl::Status NodeStatusWriter::Write(const json& object, bool refresh) {
  json status = object["status"];
  status.erase("updateTime");
  if (!refresh && last_status_ == status) return absl::OkStatus();
  last_status_.reset();  // until this write succeeds
  const std::string name = object["metadata"]["name"];
  absl::StatusOr<json> patched =
      client_.Patch(kNodeGpuStatuses, "", name, kube::PatchType::kMerge,
                    {{"status", object["status"]}}, {.subresource = "status"});
  if (!patched.ok() && kube::IsApiNotFound(patched.status())) {
    json bare = object;
    bare.erase("status");
    absl::StatusOr<json> created = client_.CreateObject(kNodeGpuStatuses, "", bare);
    if (!created.ok() && !kube::IsApiAlreadyExists(created.status())) return created.status();
    patched = client_.Patch(kNodeGpuStatuses, "", name, kube::PatchType::kMerge,
                            {{"status", object["status"]}}, {.subresource = "status"});
  }
  if (!patched.ok()) return patched.status();
  last_status_ = std::move(status);
  return absl::OkStatus();
}

}  // namespace canhazgpu::driver
