#include "driver/node_view.h"

#include "alloc/gpu_status.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "driver/device_health.h"
#include "driver/withheld.h"

namespace canhazgpu::driver {

absl::StatusOr<NodeDevices> ReadNodeDevices(const NodeParts& parts, const std::string& node_uid) {
  ASSIGN_OR_RETURN(std::vector<GpuInfo> gpus, parts.provider.Query());
  // Processes are described before the store is read, as every command does.
  std::vector<alloc::GpuUsage> usage = alloc::DescribeGpus(gpus, parts.processes);
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
    return absl::OkStatus();
  }));
  NodeDevices out;
  out.pool = dra::BuildDevicePool(gpus, parts.node_name);
  out.withheld = WithheldDevices(out.pool, alloc::BuildStatus(input));
  if (parts.health != nullptr) out.taints = DeviceTaints(out.pool, parts.health->Snapshot());
  out.node_uid = node_uid;
  return out;
}

}  // namespace canhazgpu::driver
