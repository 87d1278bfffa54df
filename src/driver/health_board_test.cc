#include "driver/health_board.h"

#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace canhazgpu::driver {
namespace {

using std::chrono::milliseconds;

DeviceHealth Healthy(const std::string& device) {
  return {.pool = "node-a", .device = device, .state = DeviceHealth::State::kHealthy};
}

TEST(HealthBoardTest, StartsEmptyAtVersionZero) {
  HealthBoard board;
  HealthSnapshot snapshot = board.Current();
  EXPECT_EQ(snapshot.version, 0u);
  EXPECT_TRUE(snapshot.devices.empty());
}

TEST(HealthBoardTest, SetReplacesTheListAndBumpsTheVersion) {
  HealthBoard board;
  board.Set({Healthy("gpu-0"), Healthy("gpu-1")});
  board.Set({Healthy("gpu-2")});
  HealthSnapshot snapshot = board.Current();
  EXPECT_EQ(snapshot.version, 2u);
  ASSERT_EQ(snapshot.devices.size(), 1u);
  EXPECT_EQ(snapshot.devices[0].device, "gpu-2");
}

TEST(HealthBoardTest, WaitReturnsAtOnceWhenTheCallerIsBehind) {
  HealthBoard board;
  board.Set({Healthy("gpu-0")});
  // An hour-long timeout: the test would hang if the wait did not see the
  // version the caller has not seen yet.
  HealthSnapshot snapshot = board.WaitForChange(0, std::chrono::hours(1));
  EXPECT_EQ(snapshot.version, 1u);
}

TEST(HealthBoardTest, WaitWakesOnSet) {
  HealthBoard board;
  std::thread setter([&] { board.Set({Healthy("gpu-0")}); });
  HealthSnapshot snapshot = board.WaitForChange(0, std::chrono::hours(1));
  setter.join();
  EXPECT_EQ(snapshot.version, 1u);
  EXPECT_EQ(snapshot.devices.size(), 1u);
}

TEST(HealthBoardTest, WaitTimesOutWithTheSameVersion) {
  HealthBoard board;
  board.Set({Healthy("gpu-0")});
  HealthSnapshot snapshot = board.WaitForChange(1, milliseconds(1));
  EXPECT_EQ(snapshot.version, 1u);
}

}  // namespace
}  // namespace canhazgpu::driver
