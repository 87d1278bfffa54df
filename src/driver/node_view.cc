#include "driver/node_view.h"

#include "alloc/gpu_status.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "driver/device_health.h"
#include "driver/withheld.h"

namespace canhazgpu::driver {

absl::StatusOr<NodeView> ReadNode(const NodeParts& parts, const std::string& node_uid) {
  ASSIGN_OR_RETURN(std::vector<GpuInfo> gpus, parts.provider.Query());
  // Processes are described before the store is read, as every command does.
  std::vector<alloc::GpuUsage> usage = alloc::DescribeGpus(gpus, parts.processes);
  std::vector<QueueEntry> queue;
  alloc::StatusInput input{.provider = parts.provider.Name(),
                           .gpus = std::move(usage),
                           .threshold_bytes = parts.threshold_bytes};
  RETURN_IF_ERROR(parts.store.Read([&](store::StateTransaction& tx) -> absl::Status {
    ASSIGN_OR_RETURN(std::optional<PoolConfig> pool, tx.GetPool());
    if (!pool) {
      return absl::FailedPreconditionError(
          "the host store has no GPU pool; run 'canhazgpu admin' on the node first");
    }
    input.gpu_count = pool->gpu_count;
    ASSIGN_OR_RETURN(input.reservations, tx.ListReservations());
    ASSIGN_OR_RETURN(queue, tx.ListQueue());
    return absl::OkStatus();
  }));
  // A waiter that died keeps nothing (its next command reaps its entry).
  std::erase_if(queue, [&](const QueueEntry& e) { return !parts.processes.IsAlive(e.waiter); });
  NodeView out;
  NodeDevices& devices = out.devices;
  devices.pool = dra::BuildDevicePool(gpus, parts.node_name, PoolOptionsFor(parts.sharing));
  out.statuses = alloc::BuildStatus(input);
  devices.withheld = WithheldDevices(devices.pool, out.statuses, parts.sharing.enabled);
  out.kept_for_queue = KeptForHostQueue(queue, out.statuses, parts.sharing.enabled);
  for (const dra::Device& d : devices.pool.devices) {
    if (KeptWhole(out.kept_for_queue, d.gpu_index)) devices.withheld.insert(d.name);
  }
  ApplySharing(devices, gpus, out.statuses, parts.sharing, out.kept_for_queue);
  if (parts.health != nullptr) {
    devices.taints = DeviceTaints(devices.pool, parts.health->Snapshot());
  }
  devices.node_uid = node_uid;
  if (!gpus.empty()) out.driver_version = gpus.front().driver_version;
  return out;
}

}  // namespace canhazgpu::driver
