// What cleanup deletes: the chosen runs' templates and pods, leftovers
// found only by their labels, shared claims no remaining pod owns; and
// what it refuses (another user's run by name) or skips (with --all).
#include "cli/k8shazgpu/cleanup_plan.h"

#include "cli/k8shazgpu/run_objects.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

json Object(const std::string& name, const std::string& run, const std::string& user,
            std::vector<std::string> owners = {}, const std::string& share = "") {
  json o = {{"metadata", {{"name", name}, {"labels", {{kRunLabel, run}, {kUserLabel, user}}}}}};
  if (!share.empty()) o["metadata"]["labels"][kShareLabel] = share;
  for (const std::string& owner : owners) {
    o["metadata"]["ownerReferences"].push_back({{"kind", "Pod"}, {"name", owner}});
  }
  return o;
}

std::vector<std::string> Names(const CleanupPlan& plan) {
  std::vector<std::string> out;
  for (const CleanupTarget& t : plan.targets) out.push_back(t.kind + "/" + t.name);
  return out;
}

// alice's run a (template, claim), bob's run b, a half-created run of
// alice's (template, no pod), a claim pool shared by a and b, and an
// ownerless shared claim of alice's whose run never made its pod.
const std::vector<json> kPods = {Object("a", "r1", "alice"), Object("b", "r2", "bob")};
const std::vector<json> kTemplates = {Object("a-gpus-r1", "r1", "alice", {"a"}),
                                      Object("b-gpus-r2", "r2", "bob", {"b"}),
                                      Object("c-gpus-r3", "r3", "alice")};
const std::vector<json> kClaims = {Object("a-gpus-r1-x", "r1", "alice", {"a"}),
                                   Object("pool", "r1", "alice", {"a", "b"}, "pool"),
                                   Object("lone", "r4", "alice", {}, "lone")};

TEST(CleanupPlanTest, AllTakesYourRunsAndLeftoversAndSkipsOthers) {
  absl::StatusOr<CleanupPlan> plan = PlanCleanup(kPods, kTemplates, kClaims, {.me = "alice"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  // pool stays: bob's b still uses it. a's claim goes with a.
  EXPECT_THAT(Names(*plan),
              ElementsAre("resourceclaimtemplate/a-gpus-r1", "resourceclaimtemplate/c-gpus-r3",
                          "pod/a", "resourceclaim/lone"));
  EXPECT_THAT(plan->others_skipped, ElementsAre("b"));
}

TEST(CleanupPlanTest, AllUsersTakesEveryRunAndTheSharedClaimWithItsLastPod) {
  absl::StatusOr<CleanupPlan> plan =
      PlanCleanup(kPods, kTemplates, kClaims, {.all_users = true, .me = "alice"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  // pool's owners are all deleted: the garbage collector takes it.
  EXPECT_THAT(
      Names(*plan),
      ElementsAre("resourceclaimtemplate/a-gpus-r1", "resourceclaimtemplate/b-gpus-r2",
                  "resourceclaimtemplate/c-gpus-r3", "pod/a", "pod/b", "resourceclaim/lone"));
  EXPECT_THAT(plan->others_skipped, IsEmpty());
}

TEST(CleanupPlanTest, NameTakesOneRunOrItsLeftoverAndRefusesAnotherUsers) {
  absl::StatusOr<CleanupPlan> a =
      PlanCleanup(kPods, kTemplates, kClaims, {.name = "a", .me = "alice"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(Names(*a), ElementsAre("resourceclaimtemplate/a-gpus-r1", "pod/a"));
  absl::StatusOr<CleanupPlan> c =
      PlanCleanup(kPods, kTemplates, kClaims, {.name = "c", .me = "alice"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(Names(*c), ElementsAre("resourceclaimtemplate/c-gpus-r3"));
  absl::StatusOr<CleanupPlan> b =
      PlanCleanup(kPods, kTemplates, kClaims, {.name = "b", .me = "alice"});
  EXPECT_EQ(b.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(b.status().message(), HasSubstr("run 'b' is bob's, not yours (alice)"));
  absl::StatusOr<CleanupPlan> forced =
      PlanCleanup(kPods, kTemplates, kClaims, {.name = "b", .all_users = true, .me = "alice"});
  ASSERT_TRUE(forced.ok());
  EXPECT_THAT(Names(*forced), ElementsAre("resourceclaimtemplate/b-gpus-r2", "pod/b"));
  absl::StatusOr<CleanupPlan> none =
      PlanCleanup(kPods, kTemplates, kClaims, {.name = "zz", .me = "alice"});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
}

// vllm run's change-set ConfigMaps: with their run, or as leftovers of a
// run interrupted before its pod existed; another user's stay.
TEST(CleanupPlanTest, ChangeSetConfigMapsGoWithTheirRunOrAsLeftovers) {
  const std::vector<json> maps = {
      Object("a-changes-0", "r1", "alice", {"a"}), Object("d-changes-0", "r5", "alice"),
      Object("d-changes-1", "r5", "alice"), Object("e-changes-0", "r6", "bob")};
  absl::StatusOr<CleanupPlan> all = PlanCleanup(kPods, {}, {}, {.me = "alice"}, maps);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(Names(*all), ElementsAre("configmap/a-changes-0", "configmap/d-changes-0",
                                       "configmap/d-changes-1", "pod/a"));
  absl::StatusOr<CleanupPlan> named =
      PlanCleanup(kPods, {}, {}, {.name = "d", .me = "alice"}, maps);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_THAT(Names(*named), ElementsAre("configmap/d-changes-0", "configmap/d-changes-1"));
}

}  // namespace
}  // namespace canhazgpu::cli::k8s

namespace canhazgpu::cli::k8s {
namespace {

// Issue 33: `cleanup --all` deleted a live reservation along with finished
// runs. It now leaves a reservation that still holds its GPUs unless told.
TEST(CleanupPlanTest, AllLeavesRunningReservationsUnlessIncluded) {
  json held = Object("held", "r5", "alice");
  held["metadata"]["labels"][kKindLabel] = kReservationKind;
  held["status"]["phase"] = "Running";
  json ended = Object("ended", "r6", "alice");
  ended["metadata"]["labels"][kKindLabel] = kReservationKind;
  ended["status"]["phase"] = "Succeeded";
  const std::vector<json> pods = {Object("a", "r1", "alice"), held, ended};
  const std::vector<json> templates = {Object("held-gpus-r5", "r5", "alice", {"held"})};
  absl::StatusOr<CleanupPlan> plan = PlanCleanup(pods, templates, {}, {.me = "alice"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(Names(*plan), ElementsAre("pod/a", "pod/ended"));
  EXPECT_THAT(plan->reservations_skipped, ElementsAre("held"));
  plan = PlanCleanup(pods, templates, {}, {.me = "alice", .include_reservations = true});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(Names(*plan),
              ElementsAre("resourceclaimtemplate/held-gpus-r5", "pod/a", "pod/held", "pod/ended"));
  EXPECT_THAT(plan->reservations_skipped, IsEmpty());
  // Named, it is what the user asked for.
  plan = PlanCleanup(pods, templates, {}, {.name = "held", .me = "alice"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(Names(*plan), ElementsAre("resourceclaimtemplate/held-gpus-r5", "pod/held"));
}

// A multi-node run is its Job: cleanup deletes the Job (its ranks with it),
// its Service and template, never the ranks one by one (the Job would make
// them again); another run's ranks stay.
TEST(CleanupPlanTest, AMultiNodeRunIsDeletedAsItsJob) {
  json rank0 = Object("g-0-abcde", "r9", "alice");
  rank0["metadata"]["ownerReferences"] = {{{"kind", "Job"}, {"name", "g"}, {"controller", true}}};
  json rank1 = rank0;
  rank1["metadata"]["name"] = "g-1-fghij";
  const std::vector<json> pods = {rank0, rank1, Object("a", "r1", "alice")};
  const std::vector<json> jobs = {Object("g", "r9", "alice")};
  const std::vector<json> services = {Object("g", "r9", "alice"), Object("gone", "r8", "alice")};
  const std::vector<json> templates = {Object("g-gpus-r9", "r9", "alice")};
  absl::StatusOr<CleanupPlan> named =
      PlanCleanup(pods, templates, {}, {.name = "g", .me = "alice"}, {}, jobs, services);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_THAT(Names(*named), ElementsAre("resourceclaimtemplate/g-gpus-r9", "service/g", "job/g"));
  // --all: the Job, the plain run, and the Service a run left without its Job.
  absl::StatusOr<CleanupPlan> all =
      PlanCleanup(pods, templates, {}, {.me = "alice"}, {}, jobs, services);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(Names(*all), ElementsAre("resourceclaimtemplate/g-gpus-r9", "service/g",
                                       "service/gone", "job/g", "pod/a"));
  absl::StatusOr<CleanupPlan> bobs =
      PlanCleanup(pods, templates, {}, {.name = "g", .me = "bob"}, {}, jobs, services);
  EXPECT_TRUE(absl::IsPermissionDenied(bobs.status())) << bobs.status();
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
