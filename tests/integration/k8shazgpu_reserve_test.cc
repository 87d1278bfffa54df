// k8shazgpu reserve and cleanup end to end: a GPU held until released,
// and cleanup of your own runs and leftovers, never another user's.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/k8shazgpu_run_fixture.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// A pod with the run labels as another user's run (the CLI's user is the
// OS user, so another one's runs are made here).
void CreateOthersPod(kube::Client& client, const std::string& name, const std::string& kind) {
  json labels = {{"canhazgpu.dev/run", "other" + name}, {"canhazgpu.dev/user", "someone-else"}};
  if (!kind.empty()) labels["canhazgpu.dev/kind"] = kind;
  ASSERT_TRUE(client
                  .CreateObject(kube::kPods, "default",
                                {{"apiVersion", "v1"},
                                 {"kind", "Pod"},
                                 {"metadata", {{"name", name}, {"labels", labels}}},
                                 {"spec",
                                  {{"restartPolicy", "Never"},
                                   {"containers",
                                    {{{"name", "main"},
                                      {"image", "ubuntu:24.04"},
                                      {"command", {"sleep", "600"}}}}}}}})
                  .ok());
}

TEST_F(K8shazgpuRunTest, ReserveHoldsAGpuUntilReleased) {
  StartCluster(1, 1);
  CliResult held = K8s({"reserve", "--name", "held", "--duration", "1h"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  EXPECT_THAT(held.out, HasSubstr("reserved gpu-0 on node node-0 for 1h"));
  EXPECT_THAT(held.out, HasSubstr("kubectl exec -it -n default pod/held -- sh"));
  const json pod = Pod("held");
  EXPECT_EQ(pod["metadata"]["labels"]["canhazgpu.dev/kind"], "reservation");
  EXPECT_EQ(pod["spec"]["activeDeadlineSeconds"], 3600);
  EXPECT_EQ(Phase("held"), "Running");
  CliResult status = K8s({"status"});
  EXPECT_THAT(status.out, HasSubstr("(from label; default/held)")) << status.out;
  // The GPU is held: another reservation waits in line, then gives up and
  // deletes what it made.
  CliResult waited = K8s({"reserve", "--name", "late", "--wait", "3s"});
  EXPECT_EQ(waited.exit_code, 3) << waited.err;
  EXPECT_THAT(waited.err, HasSubstr("in line"));
  EXPECT_THAT(waited.err, HasSubstr("pod late did not run within 3s; deleted it"));
  EXPECT_TRUE(Eventually([&] { return Labelled(kTemplates).size() == 1; }));
  // Another user's reservation is theirs to release; a name that is no
  // reservation is said so.
  CreateOthersPod(*client_, "theirs", "reservation");
  CliResult refused = K8s({"release", "theirs"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("reservation 'theirs' is someone-else's, not yours"));
  CliResult missing = K8s({"release", "nope"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("no reservation named 'nope' in namespace default"));
  // Without a name: all of yours, and only yours.
  CliResult released = K8s({"release"});
  ASSERT_EQ(released.exit_code, 0) << released.err;
  EXPECT_EQ(released.out, "Released reservation held (node node-0)\n");
  EXPECT_TRUE(Eventually([&] {
    return Labelled(kube::kPods) == std::vector<std::string>{"theirs"} &&
           Labelled(kTemplates).empty();
  })) << ::testing::PrintToString(Labelled(kube::kPods));
  EXPECT_EQ(K8s({"release"}).out, "No reservations of yours in namespace default to release\n");
}

TEST_F(K8shazgpuRunTest, CleanupDeletesYourRunsAndLeftoversAndRefusesOthers) {
  StartCluster(1, 2);
  for (const std::string name : {"one", "two"}) {
    CliResult r = K8s({"run", "--detach", "--name", name, "--", "sh", "-c", WaitForGate(name)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  CreateOthersPod(*client_, "theirs", "");
  // A run interrupted after its template: only the labels find it.
  const json one_labels = Pod("one")["metadata"]["labels"];
  ASSERT_TRUE(client_
                  ->CreateObject(
                      kTemplates, "default",
                      {{"apiVersion", "resource.k8s.io/v1"},
                       {"kind", "ResourceClaimTemplate"},
                       {"metadata",
                        {{"name", "half-gpus-abcde"},
                         {"labels",
                          {{"canhazgpu.dev/run", "abcdefghij"},
                           {"canhazgpu.dev/user", one_labels["canhazgpu.dev/user"]}}}}},
                       {"spec",
                        {{"spec",
                          {{"devices",
                            {{"requests",
                              {{{"name", "gpus"},
                                {"exactly", {{"deviceClassName", "gpu.canhazgpu.dev"}}}}}}}}}}}}})
                  .ok());
  CliResult by_name = K8s({"cleanup", "--name", "one"});
  ASSERT_EQ(by_name.exit_code, 0) << by_name.err;
  EXPECT_THAT(by_name.out,
              ::testing::MatchesRegex("deleted resourceclaimtemplate/one-gpus-[a-z0-9]+\n"
                                      "deleted pod/one\n"));
  CliResult refused = K8s({"cleanup", "--name", "theirs"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("run 'theirs' is someone-else's, not yours"));
  CliResult all = K8s({"cleanup", "--all"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_THAT(all.out, HasSubstr("deleted resourceclaimtemplate/half-gpus-abcde\n"));
  EXPECT_THAT(all.out, HasSubstr("deleted pod/two\n"));
  EXPECT_THAT(all.out, ::testing::Not(HasSubstr("theirs")));
  EXPECT_THAT(all.err, HasSubstr("left 1 run(s) of other users (theirs)"));
  EXPECT_TRUE(Eventually([&] {
    return Labelled(kube::kPods) == std::vector<std::string>{"theirs"} &&
           Labelled(kTemplates).empty() && Labelled(kube::kResourceClaims).empty();
  })) << ::testing::PrintToString(Labelled(kube::kPods))
      << ::testing::PrintToString(Labelled(kube::kResourceClaims));
  CliResult everyone = K8s({"cleanup", "--all", "--all-users"});
  EXPECT_EQ(everyone.out, "deleted pod/theirs\n") << everyone.err;
  // Bad flags: one line each, exit 2.
  for (const std::vector<std::string>& args : {std::vector<std::string>{"cleanup"},
                                               {"cleanup", "--all", "--name", "x"},
                                               {"cleanup", "stray"},
                                               {"release", "--", "a"},
                                               {"reserve", "--", "true"}}) {
    CliResult r = K8s(args);
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(args) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace canhazgpu::testing
