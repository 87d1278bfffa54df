// GPUs shared by memory on the simulated cluster (ADR 0018): nodes running
// k8shazgpu-node --gpu-sharing=memory, pods with plain ResourceClaims that
// ask for capacity.requests.memory, the simulated scheduler allocating
// shares, the node preparing them per share beside local canhazgpu shares.
#include <signal.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "integration/sim_cluster_share_fixture.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST_F(SimClusterShareTest, TwoPodsShareAGpuAThirdAndAWholeClaimWaitWithTheReason) {
  ASSERT_EQ(PublishedMemory(), "81047Mi") << ReadFile(NodeDir("node-0") + "/node.log");
  CreateSharePod("a", "10Gi", EnvScript("a"));
  CreateSharePod("b", "10Gi", EnvScript("b"));
  ASSERT_TRUE(Eventually([&] {
    return Logs("a").starts_with("MEM=") && Logs("b").starts_with("MEM=");
  })) << Pod("a").dump()
      << Pod("b").dump() << ReadFile(NodeDir("node-0") + "/node.log");
  // The kubelet posts the phase a moment after the output.
  EXPECT_TRUE(Eventually([&] { return Phase("a") == "Running" && Phase("b") == "Running"; }));
  const std::string env = "MEM=10737418240 TOTAL=85520809984 ISOLATION=none\n";
  EXPECT_EQ(Logs("a"), env);
  EXPECT_EQ(Logs("b"), env);
  EXPECT_NE(ShareIdOf("a"), "");
  EXPECT_NE(ShareIdOf("a"), ShareIdOf("b"));
  // The node's own canhazgpu sees both shares.
  CliResult status = RunProgram({CANHAZGPU_BINARY, "status"}, NodeEnv("node-0"));
  EXPECT_THAT(status.out, HasSubstr("10Gi")) << status.out;

  // 59Gi left: 70Gi does not fit, nor the whole GPU.
  CreateSharePod("big", "70Gi", "echo big ran");
  CreateSharePod("whole", "", "echo whole ran");
  ASSERT_TRUE(Eventually([&] {
    return !Unschedulable("big").empty() && !Unschedulable("whole").empty();
  })) << Pod("big").dump();
  EXPECT_THAT(Unschedulable("big"), HasSubstr("0/1 nodes are available"));
  EXPECT_EQ(Phase("big"), "Pending");
  EXPECT_EQ(Phase("whole"), "Pending");

  WriteFile(Gate("a"), "");
  WriteFile(Gate("b"), "");
  EXPECT_TRUE(Eventually([&] { return Phase("big") == "Succeeded"; })) << Pod("big").dump();
  EXPECT_TRUE(Eventually([&] { return Phase("whole") == "Succeeded"; })) << Pod("whole").dump();
  EXPECT_EQ(Logs("whole"), "whole ran\n");
}

TEST_F(SimClusterShareTest, ALocalShareAndPodSharesNeverExceedTheGpu) {
  CliResult reserve =
      RunProgram({CANHAZGPU_BINARY, "reserve", "--gpu-mem", "60Gi"}, NodeEnv("node-0"));
  ASSERT_EQ(reserve.exit_code, 0) << reserve.err;
  // 81047Mi less the local 60Gi.
  ASSERT_TRUE(Eventually([&] { return PublishedMemory() == "19607Mi"; }))
      << PublishedMemory() << ReadFile(NodeDir("node-0") + "/node.log");
  CreateSharePod("fits", "10Gi", EnvScript("fits"));
  ASSERT_TRUE(Eventually([&] { return Logs("fits").starts_with("MEM="); })) << Pod("fits").dump();
  CreateSharePod("over", "10Gi", "echo over ran");
  ASSERT_TRUE(Eventually([&] { return !Unschedulable("over").empty(); })) << Pod("over").dump();
  EXPECT_EQ(Phase("over"), "Pending");
  // The host's own view: the local share and the pod's, together within the GPU.
  CliResult status = RunProgram({CANHAZGPU_BINARY, "status"}, NodeEnv("node-0"));
  EXPECT_THAT(status.out, HasSubstr("60Gi")) << status.out;
  EXPECT_THAT(status.out, HasSubstr("10Gi")) << status.out;
  WriteFile(Gate("fits"), "");
}

// The host's queue is fair to its own users against pods too: a local user
// waiting for gpu-0 whole (a pod's share on it) gets it once that share
// ends, because the node stops offering it to new pods' shares meanwhile.
TEST_F(SimClusterShareTest, ALocalWaiterForAWholeGpuIsNotStarvedByPodShares) {
  CreateSharePod("a", "10Gi", EnvScript("a"));
  ASSERT_TRUE(Eventually([&] { return Logs("a").starts_with("MEM="); })) << Pod("a").dump();
  const int waiter = SpawnProgram({CANHAZGPU_BINARY, "reserve", "--gpus", "1", "--note", "whole"},
                                  NodeEnv("node-0"));
  // Withheld from the slice, and the node says for whom.
  ASSERT_TRUE(Eventually([&] { return PublishedMemory().empty(); }))
      << PublishedMemory() << ReadFile(NodeDir("node-0") + "/node.log");
  json kept;
  ASSERT_TRUE(Eventually([&] {
    const json status = client_->Get(kube::kNodeGpuStatuses, "", "node-0").value_or(json{});
    kept = status.value(json::json_pointer("/status/devices/0/keptFor"), json::array());
    return !kept.empty();
  })) << ReadFile(NodeDir("node-0") + "/node.log");
  ASSERT_EQ(kept.size(), 1u) << kept.dump();
  EXPECT_FALSE(kept[0].value("user", "").empty());
  EXPECT_FALSE(kept[0].contains("memory")) << "the whole GPU is kept";

  // 69Gi are unshared, yet a new pod's share waits behind the local waiter.
  CreateSharePod("b", "10Gi", "echo b ran");
  ASSERT_TRUE(Eventually([&] { return !Unschedulable("b").empty(); })) << Pod("b").dump();
  EXPECT_FALSE(ProcessGone(waiter));

  // The pod's share ends: the waiter has the GPU whole; then it gives it
  // back and the pod that waited runs.
  WriteFile(Gate("a"), "");
  ASSERT_TRUE(Eventually([&] { return ProcessGone(waiter); }))
      << ReadFile(NodeDir("node-0") + "/node.log");
  EXPECT_EQ(ExitCodeOf(waiter), 0);
  EXPECT_EQ(Phase("b"), "Pending");
  CliResult release = RunProgram({CANHAZGPU_BINARY, "release"}, NodeEnv("node-0"));
  ASSERT_EQ(release.exit_code, 0) << release.err;
  EXPECT_TRUE(Eventually([&] { return Phase("b") == "Succeeded"; })) << Pod("b").dump();
}

TEST_F(SimClusterShareTest, SharesSurviveASigkilledNodeDaemonAndAreUnpreparedAfter) {
  CreateSharePod("a", "10Gi", EnvScript("a"));
  CreateSharePod("b", "20Gi", EnvScript("b"));
  ASSERT_TRUE(Eventually([&] {
    return Logs("a").starts_with("MEM=") && Logs("b").starts_with("MEM=");
  })) << ReadFile(NodeDir("node-0") + "/node.log");
  const int first = DaemonPid("node-0");
  ASSERT_GT(first, 0);
  kill(first, SIGKILL);
  ASSERT_TRUE(Eventually([&] { return DaemonPid("node-0") != first && DaemonPid("node-0") > 0; }));
  // The restarted daemon keeps both shares: the GPU still has 49Gi taken.
  ASSERT_TRUE(Eventually([&] {
    const std::string status = RunProgram({CANHAZGPU_BINARY, "status"}, NodeEnv("node-0")).out;
    return status.find("20Gi") != std::string::npos && status.find("10Gi") != std::string::npos;
  }));
  EXPECT_TRUE(Eventually([&] { return Phase("a") == "Running" && Phase("b") == "Running"; }));
  WriteFile(Gate("a"), "");
  WriteFile(Gate("b"), "");
  EXPECT_TRUE(Eventually([&] { return Phase("a") == "Succeeded" && Phase("b") == "Succeeded"; }));
  // Unprepared: no CDI spec, no reservation left.
  EXPECT_TRUE(Eventually([&] { return std::filesystem::is_empty(NodeDir("node-0") + "/cdi"); }))
      << ReadFile(NodeDir("node-0") + "/node.log");
  EXPECT_TRUE(Eventually([&] {
    return RunProgram({CANHAZGPU_BINARY, "status"}, NodeEnv("node-0")).out.find("alice") ==
           std::string::npos;
  }));
}

}  // namespace
}  // namespace canhazgpu::testing
