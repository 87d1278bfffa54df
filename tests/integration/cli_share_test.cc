// Sharing one GPU by memory with the real canhazgpu on a simulated host
// (ADR 0018, issue 34): two users share a GPU, a third that does not fit
// waits with the reason, and a whole-GPU request waits while shares exist.
// The simulated GPUs have 81559 MiB: 81047 MiB (79.1Gi) to share.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "integration/multi_user.h"

namespace canhazgpu::testing {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;

constexpr uint64_t kGi = uint64_t{1} << 30;

class CliShareTest : public MultiUserTest {
 protected:
  void SetUp() override {
    MultiUserTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    CliResult admin = AsRoot({"admin", "--provider", "fake", "--gpus", "1"});
    ASSERT_EQ(admin.exit_code, 0) << admin.err;
  }
  json Status() {
    CliResult r = AsRoot({"status", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
  json Queue() { return json::parse(AsRoot({"queue", "--json"}).out); }
};

TEST_F(CliShareTest, TwoUsersShareOneGpuAndAThirdThatDoesNotFitWaitsWithTheReason) {
  CliResult alice = AsAlice({"reserve", "--gpu-mem", "50Gi", "--duration", "2h"});
  ASSERT_EQ(alice.exit_code, 0) << alice.err;
  EXPECT_THAT(alice.out, HasSubstr("Reserved 50Gi of each of 1 GPU(s): 0"));
  EXPECT_THAT(alice.out, HasSubstr("memory isolation: none"));
  CliResult bob = AsBob({"reserve", "--gpu-mem", "24Gi"});
  ASSERT_EQ(bob.exit_code, 0) << bob.err;

  json gpu = Status()[0];
  EXPECT_EQ(gpu["status"], "IN_USE");
  EXPECT_EQ(gpu["shared"], true);
  const std::string alice_and_bob = alice_.name + ", " + bob_.name;
  EXPECT_EQ(gpu["user"], alice_and_bob);
  ASSERT_EQ(gpu["shares"].size(), 2u);
  EXPECT_EQ(gpu["shares"][0]["memory_bytes"].get<uint64_t>() +
                gpu["shares"][1]["memory_bytes"].get<uint64_t>(),
            74 * kGi);
  EXPECT_EQ(gpu["memory_shareable_bytes"], (81559 - 512) * (kGi >> 10));
  EXPECT_EQ(gpu["memory_left_bytes"], (81559 - 512 - 50 * 1024 - 24 * 1024) * (kGi >> 10));
  CliResult table = AsRoot({"status"});
  EXPECT_THAT(table.out, HasSubstr("SHARED"));
  const std::string left =
      "5.1Gi of 79.1Gi left (" + alice_.name + " 50Gi, " + bob_.name + " 24Gi)";
  EXPECT_THAT(table.out, HasSubstr(left));

  // The third does not fit: --nonblock says why and changes nothing ...
  CliResult refused = AsRoot({"reserve", "--gpu-mem", "10Gi", "--nonblock"});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("for 1 share(s) of 10Gi: gpu 0: " + left));
  // ... and without it, it waits in line for the memory.
  int waiter = host_.Spawn({"reserve", "--gpu-mem", "10Gi", "--note", "third"});
  ASSERT_TRUE(Eventually([&] { return Queue()["total_waiting"] == 1; }));
  EXPECT_EQ(Queue()["entries"][0]["requested_memory_bytes"], 10 * kGi);
  ASSERT_EQ(AsBob({"release"}).exit_code, 0);
  EXPECT_EQ(ExitCodeOf(waiter), 0);
  gpu = Status()[0];
  ASSERT_EQ(gpu["shares"].size(), 2u);
  EXPECT_EQ(gpu["user"], alice_.name + ", root");
  int third = 0;
  for (const json& share : gpu["shares"]) third += share.value("note", "") == "third";
  EXPECT_EQ(third, 1);
}

TEST_F(CliShareTest, WholeGpuRequestWaitsWhileSharesExist) {
  ASSERT_EQ(AsAlice({"reserve", "--gpu-mem", "10Gi"}).exit_code, 0);
  CliResult refused = AsBob({"reserve", "--nonblock"});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  int whole = host_.Spawn({"reserve", "-g", "1", "--note", "whole"});
  ASSERT_TRUE(Eventually([&] { return Queue()["total_waiting"] == 1; }));
  EXPECT_EQ(Status()[0]["shared"], true) << "the share stays; the whole GPU waits";
  ASSERT_EQ(AsAlice({"release"}).exit_code, 0);
  EXPECT_EQ(ExitCodeOf(whole), 0);
  json gpu = Status()[0];
  EXPECT_FALSE(gpu.contains("shared"));
  EXPECT_EQ(gpu["note"], "whole");
  // And the other way round: a share waits while the GPU is held whole.
  CliResult share = AsAlice({"reserve", "--gpu-mem", "1Gi", "--nonblock"});
  EXPECT_EQ(share.exit_code, 3) << share.err;
  EXPECT_THAT(share.err, HasSubstr("reserved whole by root"));
}

TEST_F(CliShareTest, RunTellsTheJobItsShareAndEndsItWithTheJob) {
  CliResult run = AsAlice({"run", "--gpu-mem", "1.5Gi", "--", "sh", "-c",
                           "echo mem=$CANHAZGPU_GPU_MEM gpus=$CUDA_VISIBLE_DEVICES"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("mem=1610612736 gpus=0"));
  EXPECT_THAT(run.err, HasSubstr("memory isolation: none"));
  EXPECT_FALSE(Status()[0].contains("shared")) << "the share ended with the job";
}

TEST_F(CliShareTest, BadOrImpossibleSizesAreOneLineErrorsThatChangeNothing) {
  for (const char* bad : {"abc", "0", "-1Gi", "10Qi"}) {
    CliResult r = AsAlice({"reserve", "--gpu-mem", bad});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("--gpu-mem")) << bad;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  CliResult too_big = AsAlice({"reserve", "--gpu-mem", "80Gi"});
  EXPECT_EQ(too_big.exit_code, 2) << too_big.err;
  EXPECT_THAT(too_big.err, HasSubstr("more than a GPU here can share: at most 79.1Gi"));
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
  EXPECT_EQ(Queue()["total_waiting"], 0);
}

}  // namespace
}  // namespace canhazgpu::testing
