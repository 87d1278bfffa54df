// k8shazgpu run --share: several runs on one named claim, and whose
// consent another user needs to join it.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/k8shazgpu_run_fixture.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST_F(K8shazgpuRunTest, TwoRunsShareOneNamedClaim) {
  StartCluster(1, 2);
  CliResult a = K8s({"run", "--keep", "--share", "pool", "--name", "a", "--", "sh", "-c",
                     "echo $NVIDIA_VISIBLE_DEVICES"});
  CliResult b = K8s({"run", "--keep", "--share", "pool", "--name", "b", "--", "sh", "-c",
                     "echo $NVIDIA_VISIBLE_DEVICES"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_THAT(a.out, HasSubstr("GPU-"));
  const json claim = client_->Get(kube::kResourceClaims, "default", "pool").value();
  EXPECT_EQ(claim["metadata"]["labels"]["canhazgpu.dev/share"], "pool");
  std::set<std::string> owners;
  for (const json& o : claim["metadata"]["ownerReferences"]) owners.insert(o["name"]);
  EXPECT_EQ(owners, (std::set<std::string>{"a", "b"}));
  // By name, not from a template.
  EXPECT_FALSE(Pod("a")["status"].contains("resourceClaimStatuses")) << Pod("a").dump();
  EXPECT_EQ(Pod("b")["spec"]["resourceClaims"][0]["resourceClaimName"], "pool");
  EXPECT_THAT(Labelled(kTemplates, "default"), IsEmpty());
  // Another request under the same name is refused, creating nothing.
  CliResult other = K8s({"run", "--share", "pool", "--gpus", "2", "--name", "c", "--", "true"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_THAT(other.err, HasSubstr("exists with another request"));
  EXPECT_TRUE(kube::IsApiNotFound(client_->Get(kube::kPods, "default", "c").status()));
}

// Another user's shared claim is joined only with its creator's consent.
TEST_F(K8shazgpuRunTest, AnotherUsersSharedClaimNeedsTheirConsent) {
  StartCluster(1, 2);
  CliResult a = K8s({"run", "--share", "pool", "--share-with", "bob", "--name", "a", "--detach",
                     "--", "sleep", "300"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  json claim = client_->Get(kube::kResourceClaims, "default", "pool").value();
  const std::string me = claim["metadata"]["labels"]["canhazgpu.dev/user"];
  EXPECT_EQ(claim["metadata"]["annotations"]["canhazgpu.dev/share-with"], "bob");
  // The claim as if alice had made it: this user is not on her list.
  claim["metadata"]["labels"]["canhazgpu.dev/user"] = "alice";
  ASSERT_TRUE(client_->Update(kube::kResourceClaims, "default", claim).ok());
  CliResult b = K8s({"run", "--share", "pool", "--name", "b", "--", "true"});
  EXPECT_NE(b.exit_code, 0);
  EXPECT_THAT(b.err, HasSubstr("the shared claim 'pool' is alice's, who has not let " + me));
  EXPECT_TRUE(kube::IsApiNotFound(client_->Get(kube::kPods, "default", "b").status()));
  // She lets everyone in.
  claim = client_->Get(kube::kResourceClaims, "default", "pool").value();
  claim["metadata"]["annotations"]["canhazgpu.dev/share-with"] = "*";
  ASSERT_TRUE(client_->Update(kube::kResourceClaims, "default", claim).ok());
  CliResult c = K8s({"run", "--share", "pool", "--name", "c", "--", "true"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
}

}  // namespace
}  // namespace canhazgpu::testing
