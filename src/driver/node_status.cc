#include "driver/node_status.h"

#include <map>

#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "dra/devices.h"

namespace canhazgpu::driver {
namespace {

using nlohmann::json;

const char* StateOf(const alloc::GpuStatus& s) {
  switch (s.state) {
    case alloc::GpuState::kAvailable:
      return "Free";
    case alloc::GpuState::kInUse:
      // Held by shares of its memory, pods' or local users': counted once.
      if (!s.shares.empty()) return "Shared";
      return s.reservation && s.reservation->kind == ReservationKind::kK8s ? "Prepared" : "Held";
    case alloc::GpuState::kUnreserved:
    case alloc::GpuState::kError:  // not known to be free
      return "InUse";
  }
  return "InUse";
}

kube::NodeGpuUsage Usage(const alloc::GpuStatus& s) {
  kube::NodeGpuUsage usage;
  usage.memory_used_bytes = s.info ? s.info->memory_used_bytes : 0;
  for (const alloc::ProcessUsage& p : s.processes) {
    if (usage.processes.size() < 256) {
      kube::NodeGpuProcess process;
      process.pid = p.pid;
      process.user = p.user;
      process.command = std::string(Utf8Prefix(p.command, 256));
      process.memory_bytes = p.used_memory_bytes;
      usage.processes.push_back(std::move(process));
    }
    if (std::find(usage.users.begin(), usage.users.end(), p.user) == usage.users.end()) {
      usage.users.push_back(p.user);
    }
  }
  return usage;
}

// What the host store says of the device: its state and, by state, who
// holds it or which claims it is prepared for, and what runs on it.
void AddHostState(const alloc::GpuStatus& s, kube::NodeGpuDevice& device) {
  if (device.state == "Held") {
    kube::NodeGpuHold& held = device.held.emplace();
    held.user = s.reservation->user;
    held.kind = s.reservation->kind == ReservationKind::kRun ? "Run" : "Manual";
    held.since = FormatTimestampSeconds(s.reservation->start);
    if (s.reservation->expires) held.until = FormatTimestampSeconds(*s.reservation->expires);
  }
  if (device.state == "Prepared" && s.reservation->claim) {
    const KubeClaimRef& c = *s.reservation->claim;
    kube::NodeGpuClaim claim;
    claim.namespace_name = c.namespace_name;
    claim.name = c.name;
    claim.uid = c.uid;
    if (!c.pod.empty()) claim.pods = {c.pod};
    device.claims.push_back(std::move(claim));
  }
  if (!s.processes.empty()) device.usage = Usage(s);
}

// At most this many claims and local shares per device: the CRD's bound.
constexpr size_t kMaxSharesListed = 256;

// A GPU shared by memory: what it has to share, what is left, and each
// share — a pod's under its claim, a local user's under localShares.
void AddSharing(const alloc::GpuStatus* s, const NodeDevices::SharedGpu* shared,
                const dra::Device& d, kube::NodeGpuDevice& device) {
  const bool has_shares = s != nullptr && !s->shares.empty();
  if (shared == nullptr && !has_shares) return;
  uint64_t shareable = shared != nullptr ? shared->shareable : s->shares.front().shareable;
  uint64_t taken = 0;
  kube::NodeGpuSharing& sharing = device.sharing.emplace();
  sharing.memory_isolation = d.StringAttribute(dra::kMemoryIsolationAttribute);
  const std::vector<Reservation> none;
  for (const Reservation& r : has_shares ? s->shares : none) {
    taken += r.memory;
    const std::string memory = dra::FormatQuantity(static_cast<int64_t>(r.memory));
    if (r.kind == ReservationKind::kK8s) {
      if (!r.claim || device.claims.size() >= kMaxSharesListed) continue;
      kube::NodeGpuClaim& claim = device.claims.emplace_back();
      claim.namespace_name = r.claim->namespace_name;
      claim.name = r.claim->name;
      claim.uid = r.claim->uid;
      if (!r.claim->pod.empty()) claim.pods = {r.claim->pod};
      claim.share_id = r.share;
      claim.memory = memory;
      continue;
    }
    if (sharing.local_shares.size() >= kMaxSharesListed) continue;
    kube::NodeGpuLocalShare& local = sharing.local_shares.emplace_back();
    local.share_id = r.share;
    local.user = r.user;
    local.kind = r.kind == ReservationKind::kRun ? "Run" : "Manual";
    local.memory = memory;
    local.since = FormatTimestampSeconds(r.start);
    if (r.expires) local.until = FormatTimestampSeconds(*r.expires);
  }
  // Held whole (a reservation or claim of the GPU, no shares): none left.
  if (s != nullptr && !has_shares && s->reservation) taken = shareable;
  sharing.shareable_memory = dra::FormatQuantity(static_cast<int64_t>(shareable));
  sharing.free_memory =
      dra::FormatQuantity(static_cast<int64_t>(shareable > taken ? shareable - taken : 0));
}

// Whom the host's queue keeps the device for (a MIG instance: its GPU).
void AddQueueKeeps(const NodeView& view, const dra::Device& d, kube::NodeGpuDevice& device) {
  auto it = view.kept_for_queue.find(d.gpu_index);
  if (it == view.kept_for_queue.end()) return;
  for (const QueueKeep& k : it->second) {
    if (device.kept_for.size() >= kMaxSharesListed) break;
    kube::NodeGpuQueueKeep& keep = device.kept_for.emplace_back();
    keep.user = k.user;
    if (k.memory > 0) keep.memory = dra::FormatQuantity(static_cast<int64_t>(k.memory));
    if (k.since != TimePoint()) keep.since = FormatTimestampSeconds(k.since);
  }
}

}  // namespace

kube::NodeGpuStatus NodeGpuStatusObject(const std::string& node, const std::string& node_uid,
                                        const NodeView& view, TimePoint now) {
  std::map<int, const alloc::GpuStatus*> by_gpu;
  for (const alloc::GpuStatus& s : view.statuses) by_gpu[s.gpu] = &s;
  kube::NodeGpuStatus object;
  object.metadata.name = node;
  if (!node_uid.empty()) {
    kube::OwnerReference owner;
    owner.api_version = "v1";
    owner.kind = "Node";
    owner.name = node;
    owner.uid = node_uid;
    object.metadata.owner_references.push_back(std::move(owner));
  }
  object.spec.node_name = node;
  kube::NodeGpuStatusStatus& status = object.status;
  status.update_time = FormatTimestampSeconds(now);
  status.driver_version = view.driver_version;
  kube::NodeGpuSummary& summary = status.summary;
  for (std::optional<int64_t>* count :
       {&summary.total, &summary.free, &summary.held, &summary.prepared, &summary.shared,
        &summary.in_use, &summary.tainted, &summary.mig}) {
    *count = 0;  // every count is written, zeros included
  }
  for (const dra::Device& d : view.devices.pool.devices) {
    kube::NodeGpuDevice& device = status.devices.emplace_back();
    device.name = d.name;
    device.type = d.is_mig ? "mig" : "gpu";
    device.uuid = d.StringAttribute("uuid");
    if (!d.is_mig) device.index = d.gpu_index;
    device.product_name = d.StringAttribute("productName");
    auto s = by_gpu.find(d.gpu_index);
    device.state = s == by_gpu.end() ? "InUse" : StateOf(*s->second);
    if (s != by_gpu.end()) AddHostState(*s->second, device);
    if (!d.is_mig) {
      auto shared = view.devices.shared.find(d.name);
      AddSharing(s == by_gpu.end() ? nullptr : s->second,
                 shared == view.devices.shared.end() ? nullptr : &shared->second, d, device);
    }
    AddQueueKeeps(view, d, device);
    if (auto t = view.devices.taints.find(d.name); t != view.devices.taints.end()) {
      for (const Taint& taint : t->second) {
        kube::NodeGpuTaint& j = device.taints.emplace_back();
        j.key = taint.key;
        j.value = taint.value;
        j.effect = taint.effect;
        j.source = "Driver";
      }
      if (!device.taints.empty() && !d.is_mig) ++*summary.tainted;
    }
    // The summary counts whole GPUs, each once: a MIG instance takes its
    // GPU's host state, so counting it too made one claimed GPU with 7
    // instances "8 prepared" (issue 33). Instances are only numbered.
    if (d.is_mig) {
      ++*summary.mig;
      continue;
    }
    ++*summary.total;
    const std::string& state = device.state;
    ++*(state == "Free"       ? summary.free
        : state == "Held"     ? summary.held
        : state == "Prepared" ? summary.prepared
        : state == "Shared"   ? summary.shared
                              : summary.in_use);
  }
  return object;
}

absl::Status NodeStatusWriter::Write(const kube::NodeGpuStatus& object, bool refresh) {
  json status = object.status.ToJson();
  // A merge patch leaves out what it does not name: a node that lost all
  // its devices says so with an explicit empty list.
  if (!status.contains("devices")) status["devices"] = json::array();
  json compared = status;
  compared.erase("updateTime");
  if (!refresh && last_status_ == compared) return absl::OkStatus();
  last_status_.reset();  // until this write succeeds
  const std::string& name = object.metadata.name;
  const json patch = {{"status", status}};
  absl::StatusOr<json> patched = client_.Patch(kNodeGpuStatuses, "", name, kube::PatchType::kMerge,
                                               patch, {.subresource = "status"});
  if (!patched.ok() && kube::IsApiNotFound(patched.status())) {
    kube::NodeGpuStatus bare = object;
    bare.status = {};
    absl::StatusOr<json> created = client_.CreateObject(kNodeGpuStatuses, "", bare.ToJson());
    if (!created.ok() && !kube::IsApiAlreadyExists(created.status())) return created.status();
    patched = client_.Patch(kNodeGpuStatuses, "", name, kube::PatchType::kMerge, patch,
                            {.subresource = "status"});
  }
  if (!patched.ok()) return patched.status();
  last_status_ = std::move(compared);
  return absl::OkStatus();
}

}  // namespace canhazgpu::driver
