// Runs the real NvmlHealthMonitor against the test libnvidia-ml.so built in
// tests/fake_nvml: XIDs, lost GPUs, pending page retirements and unsupported
// events are injected through the simulated-host file.
#include "gpu/nvml_health_monitor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>

#include "gpu/nvml_gpu_provider.h"
#include "host/testing/fake_clock.h"

namespace canhazgpu::gpu {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using ::testing::HasSubstr;

class NvmlHealthMonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nvml_health.XXXXXX";
    dir_ = mkdtemp(tmpl);
    host_ = dir_ + "/host.json";
    WriteHost("", "");
    setenv("FAKE_NVML_HOST", host_.c_str(), 1);
    unsetenv("FAKE_NVML_INIT_ERROR");
    options_.event_wait = milliseconds(20);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Two GPUs; `gpu0` and `gpu1` are extra fields of each ("\"lost\": true").
  // Written whole and renamed into place: a running monitor reads it.
  void WriteHost(const std::string& gpu0, const std::string& gpu1) {
    auto extra = [](const std::string& fields) { return fields.empty() ? "" : ", " + fields; };
    std::string temp = host_ + ".tmp";
    std::ofstream(temp) << R"({"gpus": [
        {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0000", "memory_total_mib": 81559)"
                        << extra(gpu0) << R"(},
        {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1111", "memory_total_mib": 81559)"
                        << extra(gpu1) << "}]}";
    std::filesystem::rename(temp, host_);
  }

  std::unique_ptr<NvmlHealthMonitor> Monitor() {
    auto monitor = NvmlHealthMonitor::Create(FAKE_NVML_LIBRARY, clock_, options_);
    EXPECT_TRUE(monitor.ok()) << monitor.status();
    return monitor.ok() ? *std::move(monitor) : nullptr;
  }
  static GpuHealth Gpu(const HealthMonitor& monitor, int index) {
    return monitor.Snapshot().gpus.at(static_cast<size_t>(index));
  }

  std::string dir_, host_;
  host::FakeClock clock_;
  HealthOptions options_;
};

TEST_F(NvmlHealthMonitorTest, EveryGpuStartsHealthyWithItsUuidAndMinor) {
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  monitor->RunOnce();
  HealthSnapshot s = monitor->Snapshot();
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[1].uuid, "GPU-1111");
  EXPECT_EQ(s.gpus[1].minor, 1);
  EXPECT_TRUE(s.gpus[0].problems.empty());
  EXPECT_TRUE(s.gpus[1].problems.empty());
}

TEST_F(NvmlHealthMonitorTest, FatalXidMakesThatGpuUnhealthy) {
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  WriteHost("", R"("xid_events": [79])");
  monitor->RunOnce();
  GpuHealth gpu = Gpu(*monitor, 1);
  ASSERT_EQ(gpu.problems.size(), 1u);
  EXPECT_EQ(gpu.problems[0].kind, HealthProblemKind::kXid);
  EXPECT_EQ(gpu.problems[0].xid, 79u);
  EXPECT_TRUE(gpu.HasFatalProblem());
  EXPECT_THAT(gpu.problems[0].message, HasSubstr("gpu 1 (GPU-1111): XID 79 (fatal)"));
  EXPECT_TRUE(Gpu(*monitor, 0).problems.empty());
}

TEST_F(NvmlHealthMonitorTest, InformationalXidLeavesTheGpuHealthy) {
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  WriteHost(R"("xid_events": [13])", "");
  monitor->RunOnce();
  GpuHealth gpu = Gpu(*monitor, 0);
  ASSERT_EQ(gpu.problems.size(), 1u);
  EXPECT_EQ(gpu.problems[0].severity, HealthSeverity::kInformational);
  EXPECT_FALSE(gpu.HasFatalProblem());
}

TEST_F(NvmlHealthMonitorTest, EachInjectedXidIsDeliveredOnceInOrder) {
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  WriteHost("", R"("xid_events": [79, 13])");
  monitor->RunOnce();
  monitor->RunOnce();
  GpuHealth gpu = Gpu(*monitor, 1);
  ASSERT_NE(gpu.Find(HealthProblemKind::kXid, HealthSeverity::kFatal), nullptr);
  EXPECT_EQ(gpu.Find(HealthProblemKind::kXid, HealthSeverity::kFatal)->xid_count, 1);
  ASSERT_NE(gpu.Find(HealthProblemKind::kXid, HealthSeverity::kInformational), nullptr);
  WriteHost("", R"("xid_events": [79, 13, 48])");
  monitor->RunOnce();
  gpu = Gpu(*monitor, 1);
  EXPECT_EQ(gpu.Find(HealthProblemKind::kXid, HealthSeverity::kFatal)->xid, 48u);
  EXPECT_EQ(gpu.Find(HealthProblemKind::kXid, HealthSeverity::kFatal)->xid_count, 2);
}

TEST_F(NvmlHealthMonitorTest, XidClearsAfterTheQuietPeriod) {
  options_.xid_quiet_period = minutes(10);
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  WriteHost("", R"("xid_events": [79])");
  monitor->RunOnce();
  clock_.Advance(minutes(9));
  monitor->RunOnce();
  EXPECT_TRUE(Gpu(*monitor, 1).HasFatalProblem());
  clock_.Advance(minutes(1));
  monitor->RunOnce();
  EXPECT_TRUE(Gpu(*monitor, 1).problems.empty());
}

TEST_F(NvmlHealthMonitorTest, LostGpuIsReportedAndClearsWhenQueriesSucceed) {
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  WriteHost("", R"("lost": true)");
  monitor->RunOnce();
  GpuHealth gpu = Gpu(*monitor, 1);
  ASSERT_NE(gpu.Find(HealthProblemKind::kGpuLost, HealthSeverity::kFatal), nullptr);
  EXPECT_THAT(gpu.problems[0].message, HasSubstr("gpu 1 (GPU-1111): lost (GPU is lost)"));
  EXPECT_TRUE(Gpu(*monitor, 0).problems.empty());
  WriteHost("", "");
  monitor->RunOnce();
  EXPECT_TRUE(Gpu(*monitor, 1).problems.empty());
}

// A GPU lost when the monitor starts cannot be registered for events; once
// it answers again it is, and its XIDs arrive.
TEST_F(NvmlHealthMonitorTest, GpuLostAtStartIsRegisteredWhenItComesBack) {
  WriteHost("", R"("lost": true)");
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  EXPECT_TRUE(Gpu(*monitor, 1).HasFatalProblem());
  WriteHost("", "");
  monitor->RunOnce();
  EXPECT_TRUE(Gpu(*monitor, 1).problems.empty());
  WriteHost("", R"("xid_events": [79])");
  monitor->RunOnce();
  EXPECT_TRUE(Gpu(*monitor, 1).HasFatalProblem());
}

TEST_F(NvmlHealthMonitorTest, RetiredPagesPendingIsReportedAndClears) {
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  WriteHost(R"("retired_pages_pending": true)", "");
  monitor->RunOnce();
  GpuHealth gpu = Gpu(*monitor, 0);
  ASSERT_NE(gpu.Find(HealthProblemKind::kEccRetirementPending, HealthSeverity::kFatal), nullptr);
  WriteHost("", "");
  monitor->RunOnce();
  EXPECT_TRUE(Gpu(*monitor, 0).problems.empty());
}

TEST_F(NvmlHealthMonitorTest, GpuWithoutEventsIsUnmonitored) {
  WriteHost(R"("events_supported": false, "xid_events": [79])", "");
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  monitor->RunOnce();
  GpuHealth gpu = Gpu(*monitor, 0);
  ASSERT_EQ(gpu.problems.size(), 1u);  // its XIDs never arrive
  EXPECT_EQ(gpu.problems[0].kind, HealthProblemKind::kUnmonitored);
  EXPECT_EQ(gpu.problems[0].severity, HealthSeverity::kInformational);
  EXPECT_THAT(gpu.problems[0].message, HasSubstr("Not Supported"));
  EXPECT_TRUE(Gpu(*monitor, 1).problems.empty());
}

// The daemon holds a provider and a monitor; NVML counts initialisations,
// so the provider going away leaves the monitor working.
TEST_F(NvmlHealthMonitorTest, KeepsWorkingAfterAProviderShutsNvmlDown) {
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  {
    auto provider = NvmlGpuProvider::Create(FAKE_NVML_LIBRARY);
    ASSERT_TRUE(provider.ok()) << provider.status();
  }
  WriteHost("", R"("xid_events": [79])");
  monitor->RunOnce();
  EXPECT_TRUE(Gpu(*monitor, 1).HasFatalProblem());
}

TEST_F(NvmlHealthMonitorTest, NotifiesWaitersOfChanges) {
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  monitor->Start();
  uint64_t seen = monitor->Snapshot().version;
  WriteHost("", R"("xid_events": [79])");
  // Bounded: at most 60 waits of a second each.
  for (int i = 0; i < 60 && !Gpu(*monitor, 1).HasFatalProblem(); ++i) {
    seen = monitor->WaitForChange(seen, std::chrono::seconds(1));
  }
  EXPECT_TRUE(Gpu(*monitor, 1).HasFatalProblem());
  monitor->Stop();
}

TEST_F(NvmlHealthMonitorTest, StopsPromptlyWhenAsked) {
  options_.event_wait = std::chrono::seconds(1);
  auto monitor = Monitor();
  ASSERT_NE(monitor, nullptr);
  monitor->Start();
  auto stopped = std::async(std::launch::async, [&] { monitor->Stop(); });
  // Not a timing assertion: a working Stop() returns within about a second;
  // this only catches one that never returns.
  ASSERT_EQ(stopped.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  // Stopped: waiters no longer block.
  const uint64_t seen = monitor->Snapshot().version;
  EXPECT_EQ(monitor->WaitForChange(seen, std::chrono::hours(1)), seen);
}

TEST_F(NvmlHealthMonitorTest, MissingLibraryIsAFailedPrecondition) {
  auto monitor = NvmlHealthMonitor::Create(dir_ + "/libnvidia-ml.so.1", clock_, options_);
  ASSERT_FALSE(monitor.ok());
  EXPECT_EQ(monitor.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace canhazgpu::gpu
