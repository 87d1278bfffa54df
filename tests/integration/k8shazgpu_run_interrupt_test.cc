// k8shazgpu run ended early: signals, --detach, Ctrl-C with and without a
// terminal, and an interrupt during each write leaves nothing behind.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/k8shazgpu_run_fixture.h"
#include "integration/terminal_session.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST_F(K8shazgpuRunTest, ASignalEndingTheCommandIs128PlusIt) {
  StartCluster(1, 1);
  CliResult r = K8s({"run", "--", "sh", "-c", "kill -KILL $$"});
  EXPECT_EQ(r.exit_code, 137) << r.err;
}

TEST_F(K8shazgpuRunTest, DetachReturnsOnceScheduledAndSaysHowToFollow) {
  StartCluster(1, 1);
  CliResult r = K8s(
      {"run", "--detach", "--name", "bg", "--port", "8080", "--", "sh", "-c", WaitForGate("bg")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pod bg is on node node-0"));
  EXPECT_THAT(r.out, HasSubstr("kubectl logs -f -n default pod/bg"));
  EXPECT_THAT(r.out, HasSubstr("kubectl port-forward -n default pod/bg 8080:8080"));
  EXPECT_THAT(r.out, HasSubstr("k8shazgpu cleanup -n default --name bg"));
  EXPECT_EQ(Pod("bg")["spec"]["containers"][0]["ports"][0]["containerPort"], 8080);
  EXPECT_TRUE(Eventually([&] { return Phase("bg") == "Running"; }));
  WriteFile(Gate("bg"), "");
}

TEST_F(K8shazgpuRunTest, AnInterruptWithoutATerminalDeletesEverything) {
  StartCluster(1, 1);
  // Running, streaming its output.
  const int running = SpawnK8s(
      "running", {"run", "--name", "running", "--", "sh", "-c", "echo started; exec sleep 600"});
  ASSERT_TRUE(Eventually([&] { return ReadFile(Out("running")) == "started\n"; }))
      << ReadFile(Err("running"));
  kill(running, SIGINT);
  EXPECT_EQ(ExitCodeOf(running), 130) << ReadFile(Err("running"));
  EXPECT_THAT(ReadFile(Err("running")), HasSubstr("deleted pod running"));
  // Pending in line (the GPU is held on the node).
  HoldLocally("node-0");
  const int pending = SpawnK8s("pending", {"run", "--", "true"});
  ASSERT_TRUE(Eventually([&] {
    return ReadFile(Err("pending")).find("in line") != std::string::npos;
  })) << ReadFile(Err("pending"));
  kill(pending, SIGTERM);
  EXPECT_EQ(ExitCodeOf(pending), 143) << ReadFile(Err("pending"));
  EXPECT_TRUE(Eventually([&] {
    return Labelled(kube::kPods).empty() && Labelled(kTemplates).empty();
  })) << ::testing::PrintToString(Labelled(kube::kPods))
      << ::testing::PrintToString(Labelled(kTemplates));
}

// SIGINT while each write of run is in flight (held by the simulated
// server's fault injection): whatever the server made of it, nothing
// labelled is left behind.
TEST_F(K8shazgpuRunTest, AnInterruptDuringEachWriteLeavesNothing) {
  StartCluster(1, 1);
  auto stall = [&](const std::string& verb, const std::string& resource) {
    const json rule = {{"verb", verb}, {"resource", resource}, {"stallMillis", 3000}};
    CliResult r =
        RunProgram({"curl", "-sf", "-X", "POST", "-H", "Content-Type: application/json", "--data",
                    rule.dump(), client_->config().server + "/debug/k8shazgpu-sim/faults"},
                   {});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  struct Stage {
    std::string verb;
    std::string resource;
    std::function<bool()> in_flight;  // the write before the stalled one is done
  };
  const std::vector<Stage> stages = {
      {"create", "resourceclaimtemplates", [] { return true; }},
      {"create", "pods", [&] { return !Labelled(kTemplates).empty(); }},
      {"patch", "resourceclaimtemplates", [&] { return !AllPods().empty(); }},
  };
  for (const Stage& stage : stages) {
    SCOPED_TRACE(stage.verb + " " + stage.resource);
    stall(stage.verb, stage.resource);
    const int run = SpawnK8s("stage", {"run", "--", "true"});
    ASSERT_TRUE(Eventually(stage.in_flight)) << ReadFile(Err("stage"));
    kill(run, SIGINT);
    EXPECT_EQ(ExitCodeOf(run), 130) << ReadFile(Err("stage"));
    EXPECT_TRUE(Eventually([&] {
      return Labelled(kube::kPods).empty() && Labelled(kTemplates).empty() &&
             Labelled(kube::kResourceClaims).empty();
    })) << ReadFile(Err("stage"))
        << ::testing::PrintToString(Labelled(kube::kPods))
        << ::testing::PrintToString(Labelled(kTemplates))
        << ::testing::PrintToString(Labelled(kube::kResourceClaims));
  }
}

TEST_F(K8shazgpuRunTest, OnATerminalTheLineIsRedrawnAndCtrlCAsksDetachOrDelete) {
  StartCluster(1, 1);
  HoldLocally("node-0");
  CliHost host;
  host.env() = Env();
  {
    // Waits in line (the GPU is held on the node); ^C, then "d": detached,
    // the pod stays.
    TerminalSession session(host, {"run", "--no-sync", "--name", "kept", "--", "true"}, 100,
                            K8SHAZGPU_BINARY);
    ASSERT_TRUE(session.WaitFor("in line")) << session.screen();
    EXPECT_THAT(session.screen(), HasSubstr("\r\033[Kwaiting for 1 GPU, 1st of 1"));
    session.Type("\x03");
    ASSERT_TRUE(session.WaitFor("[d/D]")) << session.screen();
    session.Type("d\n");
    EXPECT_TRUE(session.WaitFor("k8shazgpu cleanup -n default --name kept")) << session.screen();
    EXPECT_EQ(session.Wait(), 0) << session.screen();
    EXPECT_EQ(Phase("kept"), "Pending");
  }
  {
    TerminalSession session(host, {"run", "--no-sync", "--name", "gone", "--", "true"}, 100,
                            K8SHAZGPU_BINARY);
    ASSERT_TRUE(session.WaitFor("in line")) << session.screen();
    session.Type("\x03");
    ASSERT_TRUE(session.WaitFor("[d/D]")) << session.screen();
    session.Type("D\n");
    EXPECT_EQ(session.Wait(), 130) << session.screen();
    EXPECT_TRUE(Eventually([&] {
      return kube::IsApiNotFound(client_->Get(kube::kPods, "default", "gone").status());
    }));
  }
}

}  // namespace
}  // namespace canhazgpu::testing
