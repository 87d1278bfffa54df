// Workload objects through the store, as kubectl apply writes them: the
// server's defaults and its first rules (workloads.h).
#include "kubesim/workloads.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubesim/object_store.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class WorkloadsTest : public ::testing::Test {
 protected:
  ResourceType Type(const std::string& group, const std::string& resource) {
    auto t = store_.FindType(group, "v1", resource);
    EXPECT_TRUE(t.has_value()) << resource;
    return t.value_or(ResourceType{});
  }
  static json PodTemplate(json labels, const std::string& restart = "") {
    json tmpl = {{"metadata", {{"labels", labels}}},
                 {"spec", {{"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}};
    if (!restart.empty()) tmpl["spec"]["restartPolicy"] = restart;
    return tmpl;
  }
  // The one cause of a refused create, "field: message".
  std::string Refusal(const ResourceType& type, json object) {
    Outcome out = store_.Create(type, "default", std::move(object));
    if (out.ok()) return "stored";
    EXPECT_EQ(out.error->code, 422) << out.error->message;
    if (out.error->causes.size() != 1) return out.error->message;
    return out.error->causes[0].field + ": " + out.error->causes[0].message;
  }

  ObjectStore store_{1000};
};

TEST_F(WorkloadsTest, AJobGetsTheServersDefaultsAndASelectorFromItsUid) {
  Outcome out = store_.Create(Type("batch", "jobs"), "default",
                              {{"metadata", {{"name", "train"}}},
                               {"spec", {{"template", PodTemplate({{"app", "train"}}, "Never")}}}});
  ASSERT_TRUE(out.ok()) << out.error->message;
  const json& spec = out.object["spec"];
  const std::string uid = out.object["metadata"]["uid"];
  EXPECT_EQ(spec["completions"], 1);
  EXPECT_EQ(spec["parallelism"], 1);
  EXPECT_EQ(spec["backoffLimit"], 6);
  EXPECT_EQ(spec["completionMode"], "NonIndexed");
  EXPECT_EQ(spec["selector"],
            json({{"matchLabels", {{"batch.kubernetes.io/controller-uid", uid}}}}));
  const json labels = spec["template"]["metadata"]["labels"];
  EXPECT_EQ(labels["app"], "train");
  EXPECT_EQ(labels["batch.kubernetes.io/job-name"], "train");
  EXPECT_EQ(labels["controller-uid"], uid);
  EXPECT_EQ(labels["job-name"], "train");

  // Parallelism without completions: a work queue, completions stay unset.
  Outcome queue = store_.Create(
      Type("batch", "jobs"), "default",
      {{"metadata", {{"name", "queue"}}},
       {"spec", {{"parallelism", 3}, {"template", PodTemplate(json::object(), "OnFailure")}}}});
  ASSERT_TRUE(queue.ok()) << queue.error->message;
  EXPECT_FALSE(queue.object["spec"].contains("completions"));
}

TEST_F(WorkloadsTest, AJobsPodsMayNotRestartAlwaysAndIndexedNeedsCompletions) {
  EXPECT_EQ(Refusal(Type("batch", "jobs"),
                    {{"metadata", {{"name", "j"}}}, {"spec", {{"template", PodTemplate({})}}}}),
            "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: "
            "\"OnFailure\", \"Never\"");
  EXPECT_EQ(Refusal(Type("batch", "jobs"), {{"metadata", {{"name", "j"}}},
                                            {"spec",
                                             {{"completionMode", "Indexed"},
                                              {"parallelism", 2},
                                              {"template", PodTemplate({}, "Never")}}}}),
            "spec.completions: Required value: when completion mode is Indexed");
  EXPECT_FALSE(store_.Get(Type("batch", "jobs"), "default", "j").ok()) << "nothing was stored";
}

TEST_F(WorkloadsTest, AppsSelectorsAreRequiredAndMustSelectTheTemplate) {
  const ResourceType deployments = Type("apps", "deployments");
  EXPECT_EQ(Refusal(deployments, {{"metadata", {{"name", "d"}}},
                                  {"spec", {{"template", PodTemplate({{"app", "web"}})}}}}),
            "spec.selector: Required value");
  EXPECT_EQ(Refusal(deployments, {{"metadata", {{"name", "d"}}},
                                  {"spec",
                                   {{"selector", {{"matchLabels", {{"app", "db"}}}}},
                                    {"template", PodTemplate({{"app", "web"}})}}}}),
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: "
            "`selector` does not match template `labels`");
  EXPECT_EQ(
      Refusal(
          Type("apps", "daemonsets"),
          {{"metadata", {{"name", "d"}}},
           {"spec", {{"selector", json::object()}, {"template", PodTemplate({{"app", "web"}})}}}}),
      "spec.selector: Invalid value: \"\": empty selector is invalid for daemonset");
  EXPECT_THAT(Refusal(Type("apps", "replicasets"),
                      {{"metadata", {{"name", "r"}}},
                       {"spec",
                        {{"selector", {{"matchLabels", {{"app", "web"}}}}},
                         {"template", PodTemplate({{"app", "web"}}, "Never")}}}}),
              HasSubstr("Unsupported value: \"Never\": supported values: \"Always\""));

  Outcome ok = store_.Create(deployments, "default",
                             {{"metadata", {{"name", "web"}}},
                              {"spec",
                               {{"selector", {{"matchLabels", {{"app", "web"}}}}},
                                {"template", PodTemplate({{"app", "web"}})}}}});
  ASSERT_TRUE(ok.ok()) << ok.error->message;
  EXPECT_EQ(ok.object["spec"]["replicas"], 1);
  EXPECT_EQ(ok.object["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
  EXPECT_EQ(ok.object["spec"]["template"]["spec"]["restartPolicy"], "Always");
}

TEST_F(WorkloadsTest, OtherKindsGetNoWorkloadDefaults) {
  Outcome pod =
      store_.Create(Type("", "pods"), "default",
                    {{"metadata", {{"name", "p"}}},
                     {"spec", {{"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}},
                    /*strict=*/true);
  ASSERT_TRUE(pod.ok()) << pod.error->message;
  EXPECT_FALSE(pod.object["spec"].contains("template"));
}

TEST_F(WorkloadsTest, ABadlyTypedTemplateIsADecodeErrorNotACrash) {
  Outcome out = store_.Create(
      Type("batch", "jobs"), "default",
      {{"metadata", {{"name", "j"}}}, {"spec", {{"manualSelector", "yes"}, {"template", "x"}}}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error->code, 400) << out.error->message;
}

}  // namespace
}  // namespace canhazgpu::kubesim
