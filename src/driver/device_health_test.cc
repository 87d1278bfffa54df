#include "driver/device_health.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "core/duration.h"
#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gpu/nvml_gpu_provider.h"
#include "gpu/nvml_health_monitor.h"
#include "gtest/gtest.h"
#include "host/testing/fake_clock.h"

namespace canhazgpu::driver {
namespace {

using dra::testing::TestGpu;
using dra::testing::TestMigGpu;
using gpu::HealthProblem;
using gpu::HealthProblemKind;
using gpu::HealthSeverity;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const TimePoint kBegan = FromEpochMillis(1'790'000'000'000);
const std::string kBeganText = FormatTimestampSeconds(kBegan);

HealthProblem Problem(HealthProblemKind kind, HealthSeverity severity, uint64_t xid = 0) {
  HealthProblem p;
  p.kind = kind;
  p.severity = severity;
  p.xid = xid;
  p.message = StrCat("problem ", gpu::HealthProblemKindName(kind), " ", xid);
  p.since = p.last_seen = kBegan;
  return p;
}

gpu::GpuHealth Gpu(int index, std::vector<HealthProblem> problems) {
  return {.index = index, .minor = index, .uuid = StrCat("GPU-", index), .problems = problems};
}

TEST(DeviceHealthTest, EachProblemKindHasItsTaint) {
  const auto fatal = HealthSeverity::kFatal, info = HealthSeverity::kInformational;
  EXPECT_THAT(GpuTaints(Gpu(0, {Problem(HealthProblemKind::kXid, fatal, 79)})),
              ElementsAre(Taint{kXidTaintKey, "79", "NoSchedule", kBeganText}));
  EXPECT_THAT(GpuTaints(Gpu(0, {Problem(HealthProblemKind::kXid, info, 13)})),
              ElementsAre(Taint{kXidTaintKey, "13", "None", kBeganText}));
  EXPECT_THAT(GpuTaints(Gpu(0, {Problem(HealthProblemKind::kGpuLost, fatal)})),
              ElementsAre(Taint{kGpuLostTaintKey, "", "NoExecute", kBeganText}));
  EXPECT_THAT(GpuTaints(Gpu(0, {Problem(HealthProblemKind::kEccRetirementPending, fatal)})),
              ElementsAre(Taint{kEccRetirementPendingTaintKey, "", "NoSchedule", kBeganText}));
  EXPECT_THAT(GpuTaints(Gpu(0, {Problem(HealthProblemKind::kUnmonitored, info)})),
              ElementsAre(Taint{kUnmonitoredTaintKey, "", "None", kBeganText}));
  EXPECT_THAT(GpuTaints(Gpu(0, {})), IsEmpty());
}

// One taint per key: a later informational XID must not lift a fatal
// XID's NoSchedule.
TEST(DeviceHealthTest, FatalXidOutranksInformationalForTheOneXidTaint) {
  auto taints =
      GpuTaints(Gpu(0, {Problem(HealthProblemKind::kXid, HealthSeverity::kFatal, 79),
                        Problem(HealthProblemKind::kXid, HealthSeverity::kInformational, 13)}));
  EXPECT_THAT(taints, ElementsAre(Taint{kXidTaintKey, "79", "NoSchedule", kBeganText}));
}

TEST(DeviceHealthTest, KubeletHealthFollowsTheWorstProblem) {
  const auto fatal = HealthSeverity::kFatal, info = HealthSeverity::kInformational;
  DeviceHealth h = GpuDeviceHealth(Gpu(0, {Problem(HealthProblemKind::kXid, info, 13),
                                           Problem(HealthProblemKind::kGpuLost, fatal)}));
  EXPECT_EQ(h.state, DeviceHealth::State::kUnhealthy);
  EXPECT_EQ(h.message, "problem gpu-lost 0; problem xid 13");  // fatal first
  EXPECT_EQ(GpuDeviceHealth(Gpu(0, {Problem(HealthProblemKind::kUnmonitored, info)})).state,
            DeviceHealth::State::kUnknown);
  EXPECT_EQ(GpuDeviceHealth(Gpu(0, {Problem(HealthProblemKind::kXid, info, 13)})).state,
            DeviceHealth::State::kHealthy);
  EXPECT_EQ(GpuDeviceHealth(Gpu(0, {})), (DeviceHealth{.state = DeviceHealth::State::kHealthy}));
}

TEST(DeviceHealthTest, MessagesAreCutToTheKubeletsLimit) {
  HealthProblem p = Problem(HealthProblemKind::kGpuLost, HealthSeverity::kFatal);
  p.message = std::string(2000, 'x');
  DeviceHealth h = GpuDeviceHealth(Gpu(0, {p}));
  EXPECT_EQ(h.message.size(), kMaxHealthMessageBytes);
  EXPECT_EQ(h.message.substr(h.message.size() - 3), "...");
}

TEST(DeviceHealthTest, MigDevicesInheritTheirGpusHealth) {
  dra::DevicePool pool = dra::BuildDevicePool({TestGpu(0), TestMigGpu(1)}, "node-a");
  gpu::HealthSnapshot health;
  health.gpus = {Gpu(0, {}),
                 Gpu(1, {Problem(HealthProblemKind::kGpuLost, HealthSeverity::kFatal)})};
  auto taints = DeviceTaints(pool, health);
  size_t tainted = 0;
  for (const dra::Device& d : pool.devices) {
    if (d.gpu_index != 1) {
      EXPECT_FALSE(taints.contains(d.name)) << d.name;
      continue;
    }
    ++tainted;
    EXPECT_THAT(taints[d.name], ElementsAre(Taint{kGpuLostTaintKey, "", "NoExecute", kBeganText}))
        << d.name;
  }
  EXPECT_EQ(tainted, 4u);  // gpu-1 and its three MIG devices
  for (const DeviceHealth& h : DeviceHealths(pool, health)) {
    EXPECT_EQ(h.state, h.device.starts_with("gpu-1") ? DeviceHealth::State::kUnhealthy
                                                     : DeviceHealth::State::kHealthy)
        << h.device;
  }
}

TEST(DeviceHealthTest, DeviceOfAnUnwatchedGpuIsUnknown) {
  dra::DevicePool pool = dra::BuildDevicePool({TestGpu(0)}, "node-a");
  EXPECT_THAT(DeviceHealths(pool, {}),
              ElementsAre(DeviceHealth{.pool = "node-a",
                                       .device = "gpu-0",
                                       .state = DeviceHealth::State::kUnknown,
                                       .message = "health not monitored"}));
  EXPECT_THAT(DeviceTaints(pool, {}), IsEmpty());
}

// The whole way: events injected into the test libnvidia-ml.so, read by the
// real NvmlHealthMonitor, devices from the real NvmlGpuProvider.
class DeviceHealthNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/device_health.XXXXXX";
    dir_ = mkdtemp(tmpl);
    host_ = dir_ + "/host.json";
    setenv("FAKE_NVML_HOST", host_.c_str(), 1);
    unsetenv("FAKE_NVML_INIT_ERROR");
    options_.event_wait = std::chrono::milliseconds(20);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // GPU 0 plain, GPU 1 (minor 1) in MIG mode with two instances; `gpu1`
  // adds fields to GPU 1.
  void WriteHost(const std::string& gpu1) {
    std::ofstream(host_) << R"({"gpus": [
      {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0000", "memory_total_mib": 81559},
      {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1111", "memory_total_mib": 81559,
       "mig_mode": "enabled", "mig_instances": [
         {"uuid": "MIG-a", "profile": "1g.10gb", "profile_id": 19, "placement_start": 0,
          "placement_size": 1, "memory_mib": 9856},
         {"uuid": "MIG-b", "profile": "1g.10gb", "profile_id": 19, "placement_start": 1,
          "placement_size": 1, "memory_mib": 9856}])"
                         << (gpu1.empty() ? "" : ", " + gpu1) << "}]}";
  }

  // Devices of the host as the driver publishes them, and their health after
  // one monitor round.
  void Observe(gpu::NvmlHealthMonitor& monitor) {
    auto provider = gpu::NvmlGpuProvider::Create(FAKE_NVML_LIBRARY);
    ASSERT_TRUE(provider.ok()) << provider.status();
    auto gpus = (*provider)->Query();
    ASSERT_TRUE(gpus.ok()) << gpus.status();
    pool_ = dra::BuildDevicePool(*gpus, "node-a");
    monitor.RunOnce();
    taints_ = DeviceTaints(pool_, monitor.Snapshot());
    health_.clear();
    for (DeviceHealth& h : DeviceHealths(pool_, monitor.Snapshot())) health_[h.device] = h;
  }

  std::unique_ptr<gpu::NvmlHealthMonitor> Monitor() {
    auto monitor = gpu::NvmlHealthMonitor::Create(FAKE_NVML_LIBRARY, clock_, options_);
    EXPECT_TRUE(monitor.ok()) << monitor.status();
    return monitor.ok() ? *std::move(monitor) : nullptr;
  }

  std::string dir_, host_;
  host::FakeClock clock_;
  gpu::HealthOptions options_;
  dra::DevicePool pool_;
  std::map<std::string, std::vector<Taint>> taints_;
  std::map<std::string, DeviceHealth> health_;
};

TEST_F(DeviceHealthNvmlTest, FatalXidOnGpu1TaintsItAndItsMigDevicesNoSchedule) {
  WriteHost("");
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  WriteHost(R"("xid_events": [79])");
  ASSERT_NO_FATAL_FAILURE(Observe(*monitor));
  const Taint xid{kXidTaintKey, "79", "NoSchedule", FormatTimestampSeconds(clock_.Now())};
  EXPECT_THAT(taints_["gpu-1"], ElementsAre(xid));
  EXPECT_THAT(taints_["gpu-1-mig-1g10gb-19-0"], ElementsAre(xid));
  EXPECT_THAT(taints_["gpu-1-mig-1g10gb-19-1"], ElementsAre(xid));
  EXPECT_FALSE(taints_.contains("gpu-0"));
  EXPECT_EQ(health_["gpu-1"].state, DeviceHealth::State::kUnhealthy);
  EXPECT_THAT(health_["gpu-1"].message, HasSubstr("gpu 1 (GPU-1111): XID 79 (fatal)"));
  EXPECT_EQ(health_["gpu-1-mig-1g10gb-19-0"].state, DeviceHealth::State::kUnhealthy);
  EXPECT_EQ(health_["gpu-0"].state, DeviceHealth::State::kHealthy);
}

TEST_F(DeviceHealthNvmlTest, InformationalXidIsATaintWithoutEffect) {
  WriteHost("");
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  WriteHost(R"("xid_events": [13])");
  ASSERT_NO_FATAL_FAILURE(Observe(*monitor));
  EXPECT_THAT(taints_["gpu-1"],
              ElementsAre(Taint{kXidTaintKey, "13", "None", FormatTimestampSeconds(clock_.Now())}));
  EXPECT_EQ(health_["gpu-1"].state, DeviceHealth::State::kHealthy);
}

TEST_F(DeviceHealthNvmlTest, LostGpuIsNoExecuteAndUnhealthyUntilItAnswersAgain) {
  WriteHost("");
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  WriteHost(R"("lost": true)");
  ASSERT_NO_FATAL_FAILURE(Observe(*monitor));
  // The provider cannot read a lost GPU, so only gpu-0 is published then;
  // the health stream still has the lost GPU's state from the monitor.
  EXPECT_EQ(monitor->Snapshot().gpus[1].problems.size(), 1u);
  EXPECT_EQ(GpuDeviceHealth(monitor->Snapshot().gpus[1]).state, DeviceHealth::State::kUnhealthy);
  EXPECT_THAT(
      GpuTaints(monitor->Snapshot().gpus[1]),
      ElementsAre(Taint{kGpuLostTaintKey, "", "NoExecute", FormatTimestampSeconds(clock_.Now())}));
  WriteHost("");
  ASSERT_NO_FATAL_FAILURE(Observe(*monitor));
  EXPECT_FALSE(taints_.contains("gpu-1"));
  EXPECT_EQ(health_["gpu-1"].state, DeviceHealth::State::kHealthy);
}

TEST_F(DeviceHealthNvmlTest, RetiredPagesPendingIsNoScheduleUntilCleared) {
  WriteHost("");
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  WriteHost(R"("retired_pages_pending": true)");
  ASSERT_NO_FATAL_FAILURE(Observe(*monitor));
  EXPECT_THAT(taints_["gpu-1-mig-1g10gb-19-0"],
              ElementsAre(Taint{kEccRetirementPendingTaintKey, "", "NoSchedule",
                                FormatTimestampSeconds(clock_.Now())}));
  EXPECT_EQ(health_["gpu-1"].state, DeviceHealth::State::kUnhealthy);
  WriteHost("");
  ASSERT_NO_FATAL_FAILURE(Observe(*monitor));
  EXPECT_THAT(taints_, IsEmpty());
}

TEST_F(DeviceHealthNvmlTest, UnsupportedEventsAreUnmonitoredNoneAndUnknown) {
  WriteHost(R"("events_supported": false)");
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  ASSERT_NO_FATAL_FAILURE(Observe(*monitor));
  EXPECT_THAT(taints_["gpu-1"], ElementsAre(Taint{kUnmonitoredTaintKey, "", "None",
                                                  FormatTimestampSeconds(clock_.Now())}));
  EXPECT_EQ(health_["gpu-1"].state, DeviceHealth::State::kUnknown);
  EXPECT_THAT(health_["gpu-1"].message, HasSubstr("health not monitored"));
  EXPECT_EQ(health_["gpu-0"].state, DeviceHealth::State::kHealthy);
}

// timeAdded is when the problem began, so the taints of a later round are
// equal and republishing changes nothing; after the quiet period they go.
TEST_F(DeviceHealthNvmlTest, XidTaintIsStableThenClearsAfterTheQuietPeriod) {
  WriteHost("");
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  WriteHost(R"("xid_events": [79])");
  ASSERT_NO_FATAL_FAILURE(Observe(*monitor));
  const auto first = taints_;
  clock_.Advance(std::chrono::minutes(5));
  ASSERT_NO_FATAL_FAILURE(Observe(*monitor));
  EXPECT_EQ(taints_, first);
  clock_.Advance(options_.xid_quiet_period);
  ASSERT_NO_FATAL_FAILURE(Observe(*monitor));
  EXPECT_THAT(taints_, IsEmpty());
  EXPECT_EQ(health_["gpu-1"].state, DeviceHealth::State::kHealthy);
}

}  // namespace
}  // namespace canhazgpu::driver
