#include "alloc/gpu_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/testing/fake_process_table.h"

namespace canhazgpu::alloc {
namespace {

using ::testing::ElementsAre;

GpuInfo Gpu(int index, uint64_t used_mib, std::vector<GpuProcess> processes = {}) {
  GpuInfo g;
  g.index = index;
  g.memory_total_bytes = 80000 * kMiB;
  g.memory_used_bytes = used_mib * kMiB;
  g.processes = std::move(processes);
  return g;
}

class GpuStatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    table_.AddUser(1000, "alice");
    table_.AddUser(1001, "bob");
    // vllm serve (pid 100, alice) with a worker child (pid 101) on the GPU.
    table_.Add({.pid = 100, .ppid = 1, .uid = 1000, .argv = {"vllm", "serve", "org/model-a"}});
    table_.Add({.pid = 101, .ppid = 100, .uid = 1000, .argv = {"python", "-c", "worker"}});
    table_.Add({.pid = 200, .ppid = 1, .uid = 1001, .argv = {"python", "train.py"}});
  }
  host::FakeProcessTable table_;
};

TEST_F(GpuStatusTest, OwnerComesFromUidAndModelFromParent) {
  auto processes = DescribeProcesses(Gpu(0, 5000, {{101, 4000 * kMiB}, {999, kMiB}}), table_);
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0].user, "alice");
  EXPECT_EQ(processes[0].command, "python -c worker");
  ASSERT_TRUE(processes[0].model.has_value());
  EXPECT_EQ(processes[0].model->model, "org/model-a");
  EXPECT_EQ(processes[1].user, "unknown") << "a pid not visible here";
}

TEST_F(GpuStatusTest, ClassifiesEveryState) {
  StatusInput input{.gpu_count = 5, .provider = "fake"};
  std::vector<GpuInfo> gpus = {Gpu(0, 0), Gpu(1, 2048, {{200, 2048 * kMiB}}), Gpu(2, 1024),
                               Gpu(3, 5000)};
  gpus[3].error = "fell off the bus";
  input.gpus = DescribeGpus(gpus, table_);
  input.reservations = {Reservation{.gpu = 0, .uid = 1000, .user = "alice"}};
  input.last_released[2] = FromEpochMillis(5);
  auto status = BuildStatus(input);
  ASSERT_EQ(status.size(), 5u);
  EXPECT_EQ(status[0].state, GpuState::kInUse);
  EXPECT_EQ(status[1].state, GpuState::kUnreserved);
  EXPECT_THAT(ProcessUsers(status[1].processes), ElementsAre("bob"));
  EXPECT_EQ(status[2].state, GpuState::kAvailable) << "at the threshold is not above it";
  EXPECT_EQ(status[2].last_released, FromEpochMillis(5));
  EXPECT_EQ(status[3].state, GpuState::kError);
  EXPECT_EQ(status[4].state, GpuState::kError);
  EXPECT_EQ(status[4].error, "not reported by the fake provider");
}

TEST_F(GpuStatusTest, ThresholdIsConfigurable) {
  StatusInput input{
      .gpu_count = 1, .gpus = DescribeGpus({Gpu(0, 600)}, table_), .threshold_bytes = 512 * kMiB};
  EXPECT_EQ(BuildStatus(input)[0].state, GpuState::kUnreserved);
  input.threshold_bytes = 1024 * kMiB;
  EXPECT_EQ(BuildStatus(input)[0].state, GpuState::kAvailable);
}

// A shared GPU (ADR 0018): each user's processes are compared with that
// user's shares; a user with no share is reported above the threshold.
TEST_F(GpuStatusTest, SharedGpuReportsUseBeyondEachShare) {
  table_.AddUser(1002, "carol");
  table_.Add({.pid = 300, .ppid = 1, .uid = 1002, .argv = {"python", "x.py"}});
  // alice (100 + 101) uses 30Gi against 24Gi; bob 1Gi of 10Gi; carol 2Gi.
  GpuInfo gpu = Gpu(
      0, 33 * 1024,
      {{100, 20 * 1024 * kMiB}, {101, 10 * 1024 * kMiB}, {200, 1024 * kMiB}, {300, 2048 * kMiB}});
  StatusInput input{.gpu_count = 1, .gpus = DescribeGpus({gpu}, table_)};
  auto share = [](uint32_t uid, std::string user, uint64_t gib, int64_t start) {
    return Reservation{.gpu = 0,
                       .memory = gib << 30,
                       .share = user + "-share",
                       .shareable = 79 * (uint64_t{1} << 30),
                       .uid = uid,
                       .user = std::move(user),
                       .start = FromEpochMillis(start)};
  };
  input.reservations = {share(1001, "bob", 10, 2), share(1000, "alice", 24, 1)};
  GpuStatus s = BuildStatus(input)[0];
  EXPECT_EQ(s.state, GpuState::kInUse);
  ASSERT_EQ(s.shares.size(), 2u);
  EXPECT_EQ(s.shares[0].user, "alice") << "oldest share first";
  EXPECT_EQ(s.reservation->user, "alice");
  EXPECT_THAT(s.share_overuse, ElementsAre("alice uses 30Gi, 6Gi over a 24Gi share",
                                           "carol uses 2Gi without a share"));
}

}  // namespace
}  // namespace canhazgpu::alloc
