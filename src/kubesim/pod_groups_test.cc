// The GenericWorkload gate through the store: PodGroups served and checked,
// and the pod field that names one kept only with the gate on.
#include "kubesim/pod_groups.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubesim/object_store.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json GroupedPod(const std::string& name, const json& group) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  if (!group.is_null()) pod["spec"]["schedulingGroup"] = group;
  return pod;
}

json PodGroupObject(const std::string& name, const json& policy) {
  return {{"apiVersion", "scheduling.k8s.io/v1beta1"},
          {"kind", "PodGroup"},
          {"metadata", {{"name", name}}},
          {"spec", {{"schedulingPolicy", policy}}}};
}

// The fields of the 422 a write got.
std::vector<std::string> RefusedFields(const Outcome& out) {
  std::vector<std::string> fields;
  if (out.error) {
    for (const kube::StatusCause& c : out.error->causes) fields.push_back(c.field);
  }
  return fields;
}

class PodGroupsTest : public ::testing::Test {
 protected:
  ResourceType Type(const std::string& group, const std::string& version,
                    const std::string& resource) {
    auto t = store_.FindType(group, version, resource);
    EXPECT_TRUE(t.has_value()) << group << "/" << version << " " << resource;
    return t.value_or(ResourceType{});
  }
  ObjectStore store_;
};

TEST_F(PodGroupsTest, WithoutTheGateNothingIsServedAndThePodFieldIsDropped) {
  EXPECT_FALSE(store_.FindType("scheduling.k8s.io", "v1beta1", "podgroups").has_value());
  Outcome made =
      store_.Create(Type("", "v1", "pods"), "default", GroupedPod("p", {{"podGroupName", "g"}}));
  ASSERT_TRUE(made.ok());
  EXPECT_FALSE(made.object["spec"].contains("schedulingGroup"));
}

TEST_F(PodGroupsTest, WithTheGateAPodAndAJobTemplateKeepTheirGroup) {
  store_.EnableGenericWorkload();
  const ResourceType pods = Type("", "v1", "pods");
  Outcome made = store_.Create(pods, "default", GroupedPod("p", {{"podGroupName", "g"}}));
  ASSERT_TRUE(made.ok()) << made.error->message;
  EXPECT_EQ(made.object["spec"]["schedulingGroup"], json({{"podGroupName", "g"}}));
  // A status write keeps it too (the whole object is checked again).
  json status = made.object;
  status["status"]["phase"] = "Running";
  Outcome updated = store_.Update(pods, "default", "p", status, /*status=*/true);
  ASSERT_TRUE(updated.ok()) << updated.error->message;
  EXPECT_EQ(updated.object["spec"]["schedulingGroup"]["podGroupName"], "g");

  json job = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata", {{"name", "j"}}},
      {"spec", {{"template", {{"spec", GroupedPod("x", {{"podGroupName", "g"}})["spec"]}}}}}};
  job["spec"]["template"]["spec"]["restartPolicy"] = "Never";
  Outcome job_made = store_.Create(Type("batch", "v1", "jobs"), "default", job);
  ASSERT_TRUE(job_made.ok()) << job_made.error->message;
  EXPECT_EQ(job_made.object["spec"]["template"]["spec"]["schedulingGroup"]["podGroupName"], "g");
}

TEST_F(PodGroupsTest, APodsGroupIsNamedAndNeverChanges) {
  store_.EnableGenericWorkload();
  const ResourceType pods = Type("", "v1", "pods");
  EXPECT_THAT(RefusedFields(store_.Create(pods, "default", GroupedPod("a", json::object()))),
              ::testing::ElementsAre("spec.schedulingGroup.podGroupName"));
  EXPECT_THAT(RefusedFields(store_.Create(pods, "default", GroupedPod("b", "g"))),
              ::testing::ElementsAre("spec.schedulingGroup"));

  Outcome made = store_.Create(pods, "default", GroupedPod("p", {{"podGroupName", "g"}}));
  ASSERT_TRUE(made.ok());
  json moved = made.object;
  moved["spec"]["schedulingGroup"]["podGroupName"] = "h";
  Outcome refused = store_.Update(pods, "default", "p", moved, /*status=*/false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error->code, 422);
  EXPECT_THAT(refused.error->message,
              HasSubstr("spec.schedulingGroup: Invalid value: field is immutable"));
  json dropped = made.object;
  dropped["spec"].erase("schedulingGroup");
  EXPECT_FALSE(store_.Update(pods, "default", "p", dropped, /*status=*/false).ok());
}

TEST_F(PodGroupsTest, APodGroupHasExactlyOnePolicyAndAPositiveMinCount) {
  store_.EnableGenericWorkload();
  const ResourceType groups = Type("scheduling.k8s.io", "v1beta1", "podgroups");
  EXPECT_TRUE(groups.has_status);

  Outcome gang =
      store_.Create(groups, "default", PodGroupObject("gang", {{"gang", {{"minCount", 2}}}}));
  ASSERT_TRUE(gang.ok()) << gang.error->message;
  EXPECT_EQ(gang.object["apiVersion"], "scheduling.k8s.io/v1beta1");
  EXPECT_TRUE(
      store_.Create(groups, "default", PodGroupObject("basic", {{"basic", json::object()}})).ok());

  EXPECT_THAT(
      RefusedFields(store_.Create(groups, "default", PodGroupObject("none", json::object()))),
      ::testing::ElementsAre("spec.schedulingPolicy"));
  EXPECT_THAT(RefusedFields(store_.Create(groups, "default",
                                          PodGroupObject("both", {{"basic", json::object()},
                                                                  {"gang", {{"minCount", 1}}}}))),
              ::testing::ElementsAre("spec.schedulingPolicy"));
  EXPECT_THAT(RefusedFields(store_.Create(groups, "default",
                                          PodGroupObject("zero", {{"gang", {{"minCount", 0}}}}))),
              ::testing::ElementsAre("spec.schedulingPolicy.gang.minCount"));
  EXPECT_THAT(RefusedFields(store_.Create(groups, "default",
                                          PodGroupObject("nomin", {{"gang", json::object()}}))),
              ::testing::ElementsAre("spec.schedulingPolicy.gang.minCount"));
  EXPECT_FALSE(
      store_.Create(groups, "default", PodGroupObject("text", {{"gang", {{"minCount", "two"}}}}))
          .ok());

  // minCount may change; the policy's kind may not.
  json bigger = gang.object;
  bigger["spec"]["schedulingPolicy"]["gang"]["minCount"] = 3;
  EXPECT_TRUE(store_.Update(groups, "default", "gang", bigger, /*status=*/false).ok());
  json basic = gang.object;
  basic["metadata"].erase("resourceVersion");
  basic["spec"]["schedulingPolicy"] = {{"basic", json::object()}};
  EXPECT_THAT(RefusedFields(store_.Update(groups, "default", "gang", basic, /*status=*/false)),
              ::testing::ElementsAre("spec.schedulingPolicy"));
}

}  // namespace
}  // namespace canhazgpu::kubesim
