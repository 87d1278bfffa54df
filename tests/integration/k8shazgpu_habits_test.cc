// Issue 33 end to end: the host tool's habits in the cluster (-d, --note,
// -w, --nonblock, --short, release of several names), what a run leaves
// behind (nothing once followed, a TTL when detached, reservations kept
// by cleanup --all), and the cluster's defaults ConfigMap.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/k8shazgpu_run_fixture.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST_F(K8shazgpuRunTest, AFollowedRunLeavesNothingAndADetachedOneIsSweptAfterItsTtl) {
  StartCluster(1, 1);
  CliResult gone = K8s({"run", "--name", "gone", "--", "sh", "-c", "echo out"});
  ASSERT_EQ(gone.exit_code, 0) << gone.err;
  EXPECT_EQ(gone.out, "out\n");
  EXPECT_TRUE(Eventually([&] {
    return Labelled(kube::kPods).empty() && Labelled(kTemplates).empty();
  })) << ::testing::PrintToString(Labelled(kube::kPods));
  // --keep: there for kubectl describe, and never swept.
  CliResult kept = K8s({"run", "--keep", "--name", "kept", "--", "true"});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_EQ(Phase("kept"), "Succeeded");
  EXPECT_EQ(Labelled(kTemplates).size(), 1u);
  // Detached: swept by a later run once it has been finished for its TTL.
  CliResult detached = K8s({"run", "-D", "--ttl", "1s", "--name", "detached", "--", "true"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  EXPECT_EQ(Pod("detached")["metadata"]["annotations"]["canhazgpu.dev/ttl-seconds-after-finished"],
            "1");
  ASSERT_TRUE(Eventually([&] { return Phase("detached") == "Succeeded"; }));
  std::string said;
  EXPECT_TRUE(Eventually([&] {
    said += K8s({"run", "--", "true"}).err;
    return Pod("detached").empty();
  })) << said;
  EXPECT_THAT(said, HasSubstr("deleted 1 finished run(s) past their --ttl: detached"));
  EXPECT_EQ(Phase("kept"), "Succeeded");
}

TEST_F(K8shazgpuRunTest, TheHostToolsFlagsMeanWhatTheyMeanThere) {
  StartCluster(1, 1);
  CliResult held =
      K8s({"reserve", "-d", "5m", "-s", "--note", "debugging the loader", "--name", "held"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  EXPECT_EQ(held.out, "gpu-0\n") << "--short prints the devices alone";
  EXPECT_EQ(Pod("held")["spec"]["activeDeadlineSeconds"], 300);
  EXPECT_THAT(K8s({"status"}).out, HasSubstr("\"debugging the loader\""));
  // --nonblock: not free now is exit 3 at once, creating nothing.
  CliResult now = K8s({"run", "--nonblock", "--", "true"});
  EXPECT_EQ(now.exit_code, 3) << now.err;
  EXPECT_THAT(now.err, HasSubstr("not free now (--nonblock)"));
  EXPECT_THAT(now.err, HasSubstr("nothing was created"));
  EXPECT_EQ(Labelled(kube::kPods), std::vector<std::string>{"held"});
  // -w bounds the wait in line, as on the host.
  CliResult waited = K8s({"run", "-w", "2s", "--", "true"});
  EXPECT_EQ(waited.exit_code, 3) << waited.err;
  EXPECT_THAT(waited.err, HasSubstr("did not run within 2s"));
  // A waiting run's note is in the queue and in explain.
  const int waiting =
      SpawnK8s("waiting", {"run", "--name", "waiting", "--note", "eval ckpt 7", "--", "true"});
  ASSERT_TRUE(Eventually([&] {
    CliResult queue = K8s({"queue", "--json"});
    if (queue.exit_code != 0) return false;
    const json entries = json::parse(queue.out);
    return entries.size() == 1 && entries[0].value("note", "") == "eval ckpt 7";
  })) << K8s({"queue", "--json"}).out;
  EXPECT_THAT(K8s({"queue"}).out, HasSubstr("eval ckpt 7"));
  EXPECT_THAT(K8s({"explain", "waiting"}).out, HasSubstr("note: eval ckpt 7"));
  CliResult released = K8s({"release", "held"});
  ASSERT_EQ(released.exit_code, 0) << released.err;
  EXPECT_EQ(ExitCodeOf(waiting), 0) << ReadFile(Err("waiting"));
}

TEST_F(K8shazgpuRunTest, ReleaseTakesSeveralNamesAndCleanupAllKeepsRunningReservations) {
  StartCluster(1, 4);
  for (const std::string name : {"a", "b", "c"}) {
    CliResult r = K8s({"reserve", "--name", name});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  CliResult job = K8s({"run", "-D", "--name", "job", "--", "sh", "-c", WaitForGate("job")});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  // A run among the names: said how to end it, and nothing is released.
  CliResult mixed = K8s({"release", "a", "job"});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_THAT(mixed.err, HasSubstr("'job' is a run, not a reservation; end it with: k8shazgpu "
                                   "cleanup -n default --name job"));
  EXPECT_EQ(Phase("a"), "Running");
  CliResult two = K8s({"release", "a", "b"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_THAT(two.out, HasSubstr("Released reservation a (node node-0)"));
  EXPECT_THAT(two.out, HasSubstr("Released reservation b (node node-0)"));
  // cleanup --all takes the run and leaves the reservation still holding.
  CliResult all = K8s({"cleanup", "--all"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_THAT(all.out, HasSubstr("deleted pod/job"));
  EXPECT_THAT(all.err, HasSubstr("left 1 running reservation(s) (c); --include-reservations"));
  EXPECT_EQ(Phase("c"), "Running");
  CliResult everything = K8s({"cleanup", "--all", "--include-reservations"});
  ASSERT_EQ(everything.exit_code, 0) << everything.err;
  EXPECT_THAT(everything.out, HasSubstr("deleted pod/c"));
}

TEST_F(K8shazgpuRunTest, TheClustersDefaultsChooseImageAndNamespaceAndExit127IsExplained) {
  StartCluster(1, 1);
  for (const std::string ns : {"canhazgpu-system", "team-a"}) {
    ASSERT_TRUE(client_
                    ->CreateObject(
                        kube::kNamespaces, "",
                        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}})
                    .ok());
  }
  // Nothing set: the built-in default, said; a command not found is explained.
  CliResult missing = K8s({"run", "--", "sh", "-c", "no-such-command-here"});
  EXPECT_EQ(missing.exit_code, 127) << missing.err;
  EXPECT_THAT(missing.err, HasSubstr("image python:3.12-slim from the built-in default"));
  EXPECT_THAT(missing.err, HasSubstr("exit 127 is \"command not found\": is it in image "
                                     "python:3.12-slim (the built-in default)?"));
  EXPECT_THAT(missing.err, HasSubstr("configmap canhazgpu-system/k8shazgpu-defaults"));
  ASSERT_TRUE(
      client_
          ->CreateObject(
              kube::kConfigMaps, "canhazgpu-system",
              {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata", {{"name", "k8shazgpu-defaults"}}},
               {"data", {{"image", "registry.example/ml:2026.11"}, {"namespace", "team-a"}}}})
          .ok());
  // The namespace hint applies where the context names none.
  std::string kubeconfig = ReadFile(Kubeconfig());
  const size_t at = kubeconfig.find("    namespace: default\n");
  ASSERT_NE(at, std::string::npos) << kubeconfig;
  kubeconfig.erase(at, std::string("    namespace: default\n").size());
  WriteFile(dir_ + "/no-namespace.kubeconfig", kubeconfig);
  CliResult chosen = K8s({"--kubeconfig", dir_ + "/no-namespace.kubeconfig", "run", "--keep",
                          "--name", "chosen", "--", "true"});
  ASSERT_EQ(chosen.exit_code, 0) << chosen.err;
  EXPECT_THAT(chosen.err, HasSubstr("created in namespace team-a"));
  EXPECT_THAT(chosen.err,
              HasSubstr("image registry.example/ml:2026.11 from the cluster's default"));
  EXPECT_EQ(Pod("chosen", "team-a")["spec"]["containers"][0]["image"],
            "registry.example/ml:2026.11");
  // --image and -n still win; a bad value is one line naming the ConfigMap.
  CliResult flag = K8s(
      {"run", "-n", "default", "--image", "busybox:1", "--keep", "--name", "mine", "--", "true"});
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(Pod("mine")["spec"]["containers"][0]["image"], "busybox:1");
  json bad = client_->Get(kube::kConfigMaps, "canhazgpu-system", "k8shazgpu-defaults").value();
  bad["data"]["image"] = "two words";
  ASSERT_TRUE(client_->Update(kube::kConfigMaps, "canhazgpu-system", bad).ok());
  CliResult refused = K8s({"run", "--", "true"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("configmap canhazgpu-system/k8shazgpu-defaults: image 'two "
                                     "words' is not an image reference"));
}

}  // namespace
}  // namespace canhazgpu::testing
