// k8shazgpu run --nodes N --gpus-per-node G (ADR 0019) on the simulated
// cluster: an Indexed Job of N ranks on N distinct nodes, admitted all at
// once by k8shazgpu's own gang admission (scheduling gates), every rank's
// output prefixed, one failing rank ending the run with its exit code, a
// gang that does not fit holding nothing while it waits.
#include <signal.h>

#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/k8shazgpu_run_fixture.h"
#include "integration/terminal_session.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Each rank says who it is, as torchrun, SkyPilot and dstack would read it.
const char kSayRank[] =
    "echo rank=$NODE_RANK of=$NNODES world=$WORLD_SIZE nproc=$NPROC_PER_NODE "
    "master=$MASTER_ADDR:$MASTER_PORT sky=$SKYPILOT_NODE_RANK/$SKYPILOT_NUM_NODES "
    "dstack=$DSTACK_NODE_RANK/$DSTACK_GPUS_PER_NODE cuda=$CUDA_VISIBLE_DEVICES";

TEST_F(K8shazgpuRunTest, TwoRanksOnTwoNodesStartTogetherAndSayTheirRanks) {
  StartCluster(3, 2);
  CliResult r = K8s({"run", "--nodes", "2", "--gpus-per-node", "2", "--name", "gang", "--", "sh",
                     "-c", kSayRank});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_THAT(r.err, HasSubstr("2 × 2 GPUs admitted by k8shazgpu's own gang admission"));
  EXPECT_THAT(r.out, HasSubstr("[0] rank=0 of=2 world=4 nproc=2 master=gang-0.gang:29500 sky=0/2 "
                               "dstack=0/2 cuda=0,1\n"));
  EXPECT_THAT(r.out, HasSubstr("[1] rank=1 of=2 world=4 nproc=2 master=gang-0.gang:29500 sky=1/2 "
                               "dstack=1/2 cuda=0,1\n"));
  // Followed to its end: nothing is left behind.
  EXPECT_TRUE(Eventually([&] { return Labelled(kube::kJobs).empty(); }))
      << ::testing::PrintToString(Labelled(kube::kJobs));
  EXPECT_TRUE(Eventually([&] { return Labelled(kube::kServices).empty(); }));
  EXPECT_TRUE(Eventually([&] { return Labelled(kTemplates).empty(); }));
}

TEST_F(K8shazgpuRunTest, AFailingRankStopsTheOthersAndGivesItsExitCode) {
  StartCluster(2, 1);
  CliResult r = K8s({"run", "--nodes", "2", "--name", "fails", "--", "sh", "-c",
                     "if [ \"$NODE_RANK\" = 1 ]; then echo bye; exit 7; fi; sleep 100"});
  EXPECT_EQ(r.exit_code, 7) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("[1] bye\n"));
  EXPECT_THAT(r.err, HasSubstr("rank 1 (pod fails-1-"));
  EXPECT_THAT(r.err, HasSubstr(") exited with 7; the other ranks were stopped"));
  EXPECT_TRUE(Eventually([&] { return Labelled(kube::kPods).empty(); }))
      << ::testing::PrintToString(Labelled(kube::kPods));
}

// Two nodes of one GPU, one of them busy: a gang of two waits, gated, its
// claims unallocated - the free GPU stays free for anyone else - and runs
// once the busy one is done.
TEST_F(K8shazgpuRunTest, AGangThatDoesNotFitWaitsHoldingNothing) {
  StartCluster(2, 1);
  CliResult busy = K8s({"run", "--detach", "--name", "busy", "--node", "node-1", "--", "sh", "-c",
                        WaitForGate("busy")});
  ASSERT_EQ(busy.exit_code, 0) << busy.err;
  const int gang = SpawnK8s("gang", {"run", "--nodes", "2", "--name", "gang", "--", "echo", "ran"});
  // Both ranks exist, gated, and neither claim holds a device.
  ASSERT_TRUE(Eventually([&] {
    const json pods = client_
                          ->ListAll(kube::kPods, "default",
                                    {.label_selector = "batch.kubernetes.io/job-name=gang"})
                          .value_or(json::object());
    int gated = 0;
    for (const json& p : pods.value("items", json::array()))
      gated += p["spec"].contains("schedulingGates") && !p["spec"].contains("nodeName");
    return gated == 2;
  })) << ReadFile(Err("gang"));
  EXPECT_TRUE(Eventually([&] {
    return ReadFile(Err("gang")).find("holding nothing") != std::string::npos;
  })) << ReadFile(Err("gang"));
  const json claims = client_->ListAll(kube::kResourceClaims, "default").value();
  for (const json& c : claims["items"]) {
    if (!c["metadata"]["name"].get<std::string>().starts_with("gang-")) continue;
    EXPECT_FALSE(c.contains("status") && c["status"].contains("allocation")) << c.dump();
  }
  // node-0's GPU is free meanwhile: another run takes it at once.
  CliResult other = K8s({"run", "--nonblock", "--node", "node-0", "--", "true"});
  EXPECT_EQ(other.exit_code, 0) << other.err;

  // --nonblock says at once that the gang does not fit now, creating nothing.
  CliResult nonblock = K8s({"run", "--nodes", "2", "--nonblock", "--", "true"});
  EXPECT_EQ(nonblock.exit_code, 3) << nonblock.err;
  EXPECT_THAT(nonblock.err, HasSubstr("nothing was created or held"));

  WriteFile(Gate("busy"), "");
  EXPECT_EQ(ExitCodeOf(gang), 0) << ReadFile(Err("gang"));
  const std::string out = ReadFile(Out("gang"));
  EXPECT_THAT(out, HasSubstr("[0] ran\n"));
  EXPECT_THAT(out, HasSubstr("[1] ran\n"));
}

// A cluster with gang scheduling of its own (the GenericWorkload gate): the
// run goes through a PodGroup instead of gates and says so; while a node is
// busy the ranks wait unbound, their claims holding nothing, with the
// scheduler's reason; the real kubectl sees the PodGroup; it goes with the
// run.
TEST_F(K8shazgpuRunTest, TheClustersOwnGangSchedulingAdmitsWhenServed) {
  StartCluster(2, 1, 0, "canhazgpu", {"--feature-gates", "GenericWorkload=true"});
  CliResult busy = K8s({"run", "--detach", "--name", "busy", "--node", "node-1", "--", "sh", "-c",
                        WaitForGate("busy")});
  ASSERT_EQ(busy.exit_code, 0) << busy.err;
  const int gang =
      SpawnK8s("pg", {"run", "--nodes", "2", "--name", "pg", "--", "sh", "-c", kSayRank});
  ASSERT_TRUE(Eventually([&] {
    return ReadFile(Err("pg")).find(
               "waiting for the cluster's gang scheduler to place 2 × 1 GPU "
               "together (0 of 2 ranks placed)") != std::string::npos;
  })) << ReadFile(Err("pg"));
  const json pods =
      client_
          ->ListAll(kube::kPods, "default", {.label_selector = "batch.kubernetes.io/job-name=pg"})
          .value();
  ASSERT_EQ(pods["items"].size(), 2u);
  for (const json& p : pods["items"]) {
    EXPECT_FALSE(p["spec"].contains("schedulingGates")) << p.dump();
    EXPECT_FALSE(p["spec"].contains("nodeName")) << p.dump();
    EXPECT_EQ(p["spec"]["schedulingGroup"]["podGroupName"], "pg");
  }
  const json claims = client_->ListAll(kube::kResourceClaims, "default").value();
  for (const json& c : claims["items"]) {
    if (!c["metadata"]["name"].get<std::string>().starts_with("pg-")) continue;
    EXPECT_FALSE(c.contains("status") && c["status"].contains("allocation")) << c.dump();
  }
  if (std::string why = NoRecentKubectl("the kubectl check of the PodGroup does not run");
      why.empty()) {
    CliResult group = RunProgram({"kubectl", "get", "podgroups", "pg", "-o", "json"}, Env());
    ASSERT_EQ(group.exit_code, 0) << group.err;
    EXPECT_EQ(json::parse(group.out)["spec"]["schedulingPolicy"]["gang"]["minCount"], 2);
  } else {
    std::fprintf(stderr, "%s\n", why.c_str());
  }

  WriteFile(Gate("busy"), "");
  EXPECT_EQ(ExitCodeOf(gang), 0) << ReadFile(Err("pg"));
  EXPECT_THAT(ReadFile(Err("pg")),
              HasSubstr("2 × 1 GPU admitted by the cluster's gang scheduling (PodGroup pg, "
                        "scheduling.k8s.io/v1beta1)"));
  EXPECT_THAT(ReadFile(Out("pg")), HasSubstr("[1] rank=1 of=2 world=2 nproc=1"));
  EXPECT_TRUE(Eventually([&] { return Labelled(kube::kPodGroups).empty(); }))
      << ::testing::PrintToString(Labelled(kube::kPodGroups));
}

// A user who may not list every namespace's claims cannot check the gang's
// fit: the ranks are released to the scheduler anyway, and the run says so.
TEST_F(K8shazgpuRunTest, AGangRunsWhenTheClusterCannotBeReadWhole) {
  StartCluster(2, 1);
  const json rule = {
      {"verb", "list"}, {"resource", "resourceclaims"}, {"count", 100000}, {"code", 403}};
  CliResult fault =
      RunProgram({"curl", "-sf", "-X", "POST", "-H", "Content-Type: application/json", "--data",
                  rule.dump(), client_->config().server + "/debug/k8shazgpu-sim/faults"},
                 {});
  ASSERT_EQ(fault.exit_code, 0) << fault.err;
  CliResult r = K8s({"run", "--nodes", "2", "--name", "blind", "--", "sh", "-c", kSayRank});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_THAT(r.err, HasSubstr("cannot read the whole cluster to check the gang's fit"));
  EXPECT_THAT(r.out, HasSubstr("[1] rank=1 of=2 world=2"));
}

// A name already taken, by a one-pod run or a multi-node one, is one line
// that says what to do, and the second run leaves nothing behind.
TEST_F(K8shazgpuRunTest, ATakenNameIsOneLineForAPodAndForAJob) {
  StartCluster(2, 1);
  ASSERT_EQ(
      K8s({"run", "--detach", "--name", "one", "--", "sh", "-c", WaitForGate("one")}).exit_code, 0);
  CliResult pod = K8s({"run", "--name", "one", "--", "true"});
  EXPECT_EQ(pod.exit_code, 1);
  EXPECT_THAT(pod.err, HasSubstr("a pod named 'one' already exists in namespace default; choose "
                                 "another --name, or remove it with 'k8shazgpu cleanup --name "
                                 "one'"));
  EXPECT_EQ(std::count(pod.err.begin(), pod.err.end(), '\n'), 1) << pod.err;
  WriteFile(Gate("one"), "");

  ASSERT_EQ(K8s({"run", "--nodes", "2", "--detach", "--name", "two", "--", "sh", "-c",
                 WaitForGate("two")})
                .exit_code,
            0);
  CliResult job = K8s({"run", "--nodes", "2", "--name", "two", "--", "true"});
  EXPECT_EQ(job.exit_code, 1);
  EXPECT_THAT(job.err, HasSubstr("a job named 'two' already exists in namespace default"));
  EXPECT_THAT(job.err, ::testing::EndsWith("'k8shazgpu cleanup --name two'\n"));
  WriteFile(Gate("two"), "");
  // Only the two detached runs' own templates: the refused ones' went.
  EXPECT_EQ(Labelled(kTemplates).size(), 2u) << ::testing::PrintToString(Labelled(kTemplates));
}

// Two gangs that want the same two nodes: one runs, then the other; neither
// holds part of the nodes while the other waits (no deadlock).
TEST_F(K8shazgpuRunTest, TwoGangsForTheSameNodesBothFinish) {
  StartCluster(2, 1);
  const int a = SpawnK8s("a", {"run", "--nodes", "2", "--name", "ga", "--", "echo", "a"});
  const int b = SpawnK8s("b", {"run", "--nodes", "2", "--name", "gb", "--", "echo", "b"});
  EXPECT_EQ(ExitCodeOf(a), 0) << ReadFile(Err("a"));
  EXPECT_EQ(ExitCodeOf(b), 0) << ReadFile(Err("b"));
  EXPECT_THAT(ReadFile(Out("a")), HasSubstr("[1] a\n"));
  EXPECT_THAT(ReadFile(Out("b")), HasSubstr("[1] b\n"));
}

TEST_F(K8shazgpuRunTest, GangFlagsThatCannotWorkAreOneLineErrors) {
  StartCluster(1, 1);
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"run", "--gpus-per-node", "2", "--", "true"}, "--gpus-per-node needs --nodes N"},
      {{"run", "--nodes", "2", "--node", "node-0", "--", "true"}, "--nodes and --node"},
      {{"run", "--nodes", "2", "--logs", "2", "--", "true"}, "the run has ranks 0 to 1"},
      {{"run", "--nodes", "0", "--", "true"}, "--nodes"},
      {{"run", "--nodes", "2", "--name", "has.dot", "--", "true"}, "must start with a letter"},
      {{"run", "--queue", "q", "--", "true"}, "--queue needs --nodes N"},
  };
  for (const Case& c : cases) {
    CliResult r = K8s(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_THAT(Labelled(kube::kJobs), IsEmpty());
  // Kueue is not installed here: --queue says so, nothing created.
  CliResult kueue = K8s({"run", "--nodes", "1", "--queue", "team", "--", "true"});
  EXPECT_EQ(kueue.exit_code, 1) << kueue.err;
  EXPECT_THAT(kueue.err, HasSubstr("--queue team: no Kueue LocalQueue of that name"));
  // One node can never hold two ranks: said at once, nothing created.
  CliResult never = K8s({"run", "--nodes", "2", "--", "true"});
  EXPECT_EQ(never.exit_code, 1) << never.err;
  EXPECT_THAT(never.err, HasSubstr("can never run: 2 × 1 GPU on distinct nodes"));
  EXPECT_THAT(Labelled(kube::kJobs), IsEmpty());
}

// reserve --nodes: a set of nodes held together for interactive work,
// released as one by its name.
TEST_F(K8shazgpuRunTest, ReserveNodesHoldsASetAndReleaseEndsIt) {
  StartCluster(2, 2);
  CliResult r =
      K8s({"reserve", "--nodes", "2", "--gpus-per-node", "2", "--name", "held", "-d", "10m"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("reserved 2 nodes for 10m 0s (job held)"));
  EXPECT_THAT(r.out, HasSubstr("  rank 0: gpu-0, gpu-1 on node-"));
  EXPECT_THAT(r.out, HasSubstr("  rank 1: gpu-0, gpu-1 on node-"));
  EXPECT_THAT(r.out, HasSubstr("release: k8shazgpu release -n default held"));
  // Nothing else fits while it is held.
  EXPECT_EQ(K8s({"run", "--nonblock", "--", "true"}).exit_code, 3);
  CliResult released = K8s({"release", "held"});
  ASSERT_EQ(released.exit_code, 0) << released.err;
  EXPECT_EQ(released.out, "Released reservation held (2 ranks)\n");
  EXPECT_TRUE(Eventually([&] { return Labelled(kube::kPods).empty(); }))
      << ::testing::PrintToString(Labelled(kube::kPods));
  EXPECT_EQ(K8s({"run", "--nonblock", "--", "true"}).exit_code, 0);
}

// The real kubectl, an independent client, sees the run as Kubernetes
// objects: the Indexed Job and the headless Service.
TEST_F(K8shazgpuRunTest, KubectlSeesTheJobAndTheServiceOfAMultiNodeRun) {
  if (std::string why = NoRecentKubectl("the kubectl check of run --nodes does not run");
      !why.empty()) {
    GTEST_SKIP() << why;
  }
  StartCluster(2, 1);
  CliResult r = K8s(
      {"run", "--nodes", "2", "--detach", "--name", "seen", "--", "sh", "-c", WaitForGate("seen")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CliResult job = RunProgram({"kubectl", "get", "job", "seen", "-o", "json"}, Env());
  ASSERT_EQ(job.exit_code, 0) << job.err;
  const json object = json::parse(job.out);
  EXPECT_EQ(object["spec"]["completionMode"], "Indexed");
  EXPECT_EQ(object["spec"]["parallelism"], 2);
  CliResult service = RunProgram({"kubectl", "get", "service", "seen", "-o", "json"}, Env());
  ASSERT_EQ(service.exit_code, 0) << service.err;
  EXPECT_EQ(json::parse(service.out)["spec"]["clusterIP"], "None");
  WriteFile(Gate("seen"), "");
  CliResult cleanup = K8s({"cleanup", "--name", "seen"});
  EXPECT_EQ(cleanup.exit_code, 0) << cleanup.err;
  EXPECT_THAT(cleanup.out, HasSubstr("deleted job/seen"));
  EXPECT_TRUE(Eventually([&] { return Labelled(kube::kPods).empty(); }));
}

// --timeout bounds the whole run: every rank stopped, exit 124 as
// timeout(1); Ctrl-C deletes every rank.
TEST_F(K8shazgpuRunTest, TimeoutAndInterruptEndEveryRank) {
  StartCluster(2, 1);
  CliResult timed = K8s({"run", "--nodes", "2", "--timeout", "2s", "--", "sleep", "100"});
  EXPECT_EQ(timed.exit_code, 124) << timed.err;
  EXPECT_THAT(timed.err, HasSubstr("the run passed its --timeout; every rank was stopped"));
  EXPECT_TRUE(Eventually([&] { return Labelled(kube::kPods).empty(); }));

  const int run = SpawnK8s(
      "int", {"run", "--nodes", "2", "--name", "int", "--", "sh", "-c", "echo up; sleep 100"});
  ASSERT_TRUE(Eventually([&] {
    const std::string out = ReadFile(Out("int"));
    return out.find("[0] up") != std::string::npos && out.find("[1] up") != std::string::npos;
  })) << ReadFile(Err("int"));
  kill(run, SIGINT);
  EXPECT_EQ(ExitCodeOf(run), 130) << ReadFile(Err("int"));
  EXPECT_THAT(ReadFile(Err("int")), HasSubstr("interrupted; deleted job int, its 2 ranks"));
  EXPECT_TRUE(Eventually([&] { return Labelled(kube::kPods).empty(); }))
      << ::testing::PrintToString(Labelled(kube::kPods));
  EXPECT_THAT(Labelled(kube::kJobs), IsEmpty());
}

// On a terminal, Ctrl-C once the ranks run asks, as a one-pod run does:
// "d" leaves the Job running and says how to follow it; "D" deletes it.
TEST_F(K8shazgpuRunTest, OnATerminalCtrlCAsksWhetherToDetachTheRanks) {
  StartCluster(2, 1);
  CliHost host;
  host.env() = Env();
  // Runs two ranks on a terminal, presses ^C once both run, and answers.
  auto interrupt = [&](const std::string& name, const std::string& answer) {
    TerminalSession session(host,
                            {"run", "--no-sync", "--nodes", "2", "--name", name, "--", "sh", "-c",
                             "echo up; sleep 100"},
                            100, K8SHAZGPU_BINARY);
    EXPECT_TRUE(session.WaitFor("[1] up")) << session.screen();
    EXPECT_TRUE(session.WaitFor("[0] up")) << session.screen();
    session.Type("\x03");
    EXPECT_TRUE(session.WaitFor("detach (the ranks run on) or delete it? [d/D]"))
        << session.screen();
    session.Type(answer + "\n");
    if (answer == "d") {
      EXPECT_TRUE(session.WaitFor("k8shazgpu cleanup -n default --name " + name))
          << session.screen();
    }
    const int code = session.Wait();
    return std::make_pair(code, session.screen());
  };
  const auto [kept, kept_screen] = interrupt("kept", "d");
  EXPECT_EQ(kept, 0) << kept_screen;
  EXPECT_EQ(Labelled(kube::kJobs).size(), 1u);
  EXPECT_EQ(Labelled(kube::kPods).size(), 2u);
  EXPECT_EQ(K8s({"cleanup", "--name", "kept"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return Labelled(kube::kPods).empty(); }));

  const auto [gone, gone_screen] = interrupt("gone", "D");
  EXPECT_EQ(gone, 130) << gone_screen;
  EXPECT_TRUE(Eventually([&] { return Labelled(kube::kJobs).empty(); }));
}

// The issue's end-to-end check: a small Python rendezvous across two ranks.
// Rank 0 listens on MASTER_ADDR:MASTER_PORT (its own name, resolved in the
// pod), rank 1 connects; each prints its rank, the world size and its GPUs.
const char kRendezvous[] = R"PY(
import os, socket, time
rank = int(os.environ["NODE_RANK"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
print(f"rank {rank} world {os.environ['WORLD_SIZE']} cuda {os.environ['CUDA_VISIBLE_DEVICES']}", flush=True)
if rank == 0:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((socket.gethostbyname(addr), port)); s.listen(1)
    c, _ = s.accept(); print("rank 0 heard:", c.recv(100).decode(), flush=True)
else:
    for _ in range(600):
        try:
            c = socket.create_connection((addr, port), timeout=1); break
        except OSError:
            time.sleep(0.1)
    c.sendall(f"hello from rank {rank}".encode()); print(f"rank {rank} connected", flush=True)
)PY";

TEST_F(K8shazgpuRunTest, TwoRanksMeetAtTheMasterAddress) {
  StartCluster(2, 2);
  CliResult r = K8s({"run", "--nodes", "2", "--gpus-per-node", "2", "--name", "meet", "--",
                     "python3", "-c", kRendezvous});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("[0] rank 0 world 4 cuda 0,1\n"));
  EXPECT_THAT(r.out, HasSubstr("[1] rank 1 world 4 cuda 0,1\n"));
  EXPECT_THAT(r.out, HasSubstr("[1] rank 1 connected\n"));
  EXPECT_THAT(r.out, HasSubstr("[0] rank 0 heard: hello from rank 1\n"));
}

// NVIDIA's driver (the stand-in): its classes and slices, the same gang -
// the device count comes from what its CDI environment lists, never from
// nvidia.com/gpu.
TEST_F(K8shazgpuRunTest, NvidiasDriverServesAGangOfTwo) {
  StartCluster(2, 2, 0, "nvidia");
  CliResult r = K8s(
      {"run", "--nodes", "2", "--gpus-per-node", "2", "--name", "nv", "--", "sh", "-c", kSayRank});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_THAT(r.err, HasSubstr("class gpu.nvidia.com"));
  EXPECT_THAT(r.out, HasSubstr("[0] rank=0 of=2 world=4 nproc=2 master=nv-0.nv:29500"));
  EXPECT_THAT(r.out, HasSubstr("[1] rank=1 of=2 world=4 nproc=2 master=nv-0.nv:29500"));
}

}  // namespace
}  // namespace canhazgpu::testing
