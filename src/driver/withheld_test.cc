#include "driver/withheld.h"

#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::driver {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

alloc::GpuStatus Status(int gpu, alloc::GpuState state,
                        std::optional<ReservationKind> kind = std::nullopt) {
  alloc::GpuStatus s{.gpu = gpu, .state = state};
  if (kind) s.reservation = Reservation{.gpu = gpu, .user = "alice", .kind = *kind};
  return s;
}

TEST(WithheldTest, LocalHoldsAndUnreservedUseLeaveClaimsStay) {
  const dra::DevicePool pool = dra::BuildDevicePool(
      {dra::testing::TestGpu(0), dra::testing::TestMigGpu(1), dra::testing::TestGpu(2),
       dra::testing::TestGpu(3), dra::testing::TestGpu(4)},
      "node-a");
  const std::vector<alloc::GpuStatus> statuses = {
      Status(0, alloc::GpuState::kAvailable),
      Status(1, alloc::GpuState::kInUse, ReservationKind::kManual),
      Status(2, alloc::GpuState::kUnreserved),
      Status(3, alloc::GpuState::kInUse, ReservationKind::kK8s),
      Status(4, alloc::GpuState::kError)};
  EXPECT_THAT(WithheldDevices(pool, statuses),
              ElementsAre("gpu-1", "gpu-1-mig-1g5gb-19-0", "gpu-1-mig-1g5gb-19-1",
                          "gpu-1-mig-3g20gb-9-4", "gpu-2", "gpu-4"));
  EXPECT_THAT(WithheldDevices(pool, {Status(0, alloc::GpuState::kAvailable)}), IsEmpty());
}

}  // namespace
}  // namespace canhazgpu::driver
