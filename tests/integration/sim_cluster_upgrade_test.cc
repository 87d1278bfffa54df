// An upgrade of the node image under running pods (docs/cluster.md,
// "Upgrading"): the DaemonSet's rolling update stops the old daemon with
// SIGTERM and starts the new image's. Here the simulator's node binary is a
// file the test replaces, then the old daemon is told SIGTERM, as the
// kubelet would; the simulator starts the new file, as the kubelet starts
// the new pod.
#include <signal.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "integration/sim_cluster_fixture.h"

namespace canhazgpu::testing {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class SimClusterUpgradeTest : public SimClusterTest {
 protected:
  void SetUp() override {
    MakeDir();
    node_binary_ = dir_ + "/k8shazgpu-node";
    InstallImage("v1");
    StartCluster({});
  }
  // The node "image" VERSION: the real daemon, started by a script that
  // first notes which version started. Replaced by a rename, as a new image
  // replaces the old one's files: a running daemon keeps its own.
  void InstallImage(const std::string& version) {
    const std::string next = node_binary_ + ".next";
    WriteFile(next, "#!/bin/sh\necho " + version + " >>" + Versions() + "\nexec " +
                        K8SHAZGPU_NODE_BINARY + " \"$@\"\n");
    fs::permissions(next, fs::perms::owner_all);
    fs::rename(next, node_binary_);
  }
  std::string Versions() const { return dir_ + "/versions"; }
  bool HoldsReservationFor(const std::string& node, const std::string& pod) {
    CliResult status = RunProgram({CANHAZGPU_BINARY, "status", "--json"}, NodeEnv(node));
    return status.exit_code == 0 && status.out.find(pod) != std::string::npos;
  }
};

TEST_F(SimClusterUpgradeTest, ANewDaemonKeepsARunningPodsClaimAndUnpreparesItWhenThePodEnds) {
  CreatePod("train", 1, "echo up; " + WaitForGate("train"));
  ASSERT_TRUE(Eventually([&] { return Logs("train") == "up\n"; }))
      << Pod("train").dump() << ReadFile(Log());
  const std::string node = Pod("train")["spec"]["nodeName"];
  const std::string cdi = NodeDir(node) + "/cdi";
  ASSERT_FALSE(fs::is_empty(cdi));
  ASSERT_TRUE(HoldsReservationFor(node, "train"));
  const int old_daemon = DaemonPid(node);
  ASSERT_GT(old_daemon, 0);

  InstallImage("v2");
  kill(old_daemon, SIGTERM);
  ASSERT_TRUE(Eventually([&] { return DaemonPid(node) != old_daemon; })) << ReadFile(Log());
  // Every node's daemon noted "v1" at its start; the restarted one, "v2".
  EXPECT_TRUE(Eventually([&] { return ReadFile(Versions()).find("v2\n") != std::string::npos; }))
      << ReadFile(Versions());
  EXPECT_THAT(ReadFile(Log()), HasSubstr("exited with status 0"));
  // The new daemon publishes the node's devices again; the pod never
  // noticed: still running on its devices, its CDI spec and its
  // reservation in the host store in place.
  EXPECT_TRUE(Eventually([&] { return !Published(node).empty(); }))
      << ReadFile(NodeDir(node) + "/node.log");
  EXPECT_EQ(Phase("train"), "Running");
  EXPECT_FALSE(fs::is_empty(cdi));
  EXPECT_TRUE(HoldsReservationFor(node, "train"));

  // The new daemon unprepares what the old one prepared: it read the
  // checkpoint the old one left.
  WriteFile(Gate("train"), "");
  EXPECT_TRUE(Eventually([&] { return Phase("train") == "Succeeded"; })) << Pod("train").dump();
  EXPECT_TRUE(Eventually([&] { return fs::is_empty(cdi); }))
      << ReadFile(NodeDir(node) + "/node.log");
  EXPECT_TRUE(Eventually([&] { return !HoldsReservationFor(node, "train"); }));
}

}  // namespace
}  // namespace canhazgpu::testing
