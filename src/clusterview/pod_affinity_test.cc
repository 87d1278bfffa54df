#include "clusterview/pod_affinity.h"

#include "gtest/gtest.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;

json AffinityNode(const std::string& name, bool labelled = true) {
  json node = {{"metadata", {{"name", name}}}};
  if (labelled) node["metadata"]["labels"] = {{"kubernetes.io/hostname", name}};
  return node;
}

// A pod of run `run` (label), bound to `node` unless empty; `anti`: it
// keeps away from other pods of its run.
json AffinityPod(const std::string& name, const std::string& run, const std::string& node,
                 bool anti, const std::string& ns = "default") {
  json pod = {{"metadata",
               {{"name", name},
                {"namespace", ns},
                {"uid", "uid-" + name},
                {"labels", {{"canhazgpu.dev/run", run}}}}},
              {"spec", json::object()},
              {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  if (anti) {
    pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        {{"labelSelector", {{"matchLabels", {{"canhazgpu.dev/run", run}}}}},
         {"topologyKey", "kubernetes.io/hostname"}}};
  }
  return pod;
}

View AffinityTwoNodes() {
  View view;
  view.nodes["node-0"] = AffinityNode("node-0");
  view.nodes["node-1"] = AffinityNode("node-1");
  return view;
}

TEST(PodAffinityTest, ARankKeepsOffTheNodesOfItsRunsOtherRanks) {
  View view = AffinityTwoNodes();
  view.pods["default/r0"] = AffinityPod("r0", "gang", "node-0", true);
  const json r1 = AffinityPod("r1", "gang", "", true);
  EXPECT_EQ(PodAntiAffinityMismatch(view, r1, "node-0"), kAntiAffinityMismatch);
  EXPECT_EQ(PodAntiAffinityMismatch(view, r1, "node-1"), "");
  // Another run's pod, another namespace's, a finished one: no bar.
  EXPECT_EQ(PodAntiAffinityMismatch(view, AffinityPod("x", "other", "", true), "node-0"), "");
  View done = AffinityTwoNodes();
  done.pods["default/r0"] = AffinityPod("r0", "gang", "node-0", true);
  done.pods["default/r0"]["status"]["phase"] = "Failed";
  EXPECT_EQ(PodAntiAffinityMismatch(done, r1, "node-0"), "");
}

TEST(PodAffinityTest, ExistingPodsTermsAreHonouredToo) {
  View view = AffinityTwoNodes();
  view.pods["default/r0"] = AffinityPod("r0", "gang", "node-0", true);
  // The newcomer has no terms of its own, but carries the run's label.
  EXPECT_EQ(PodAntiAffinityMismatch(view, AffinityPod("sneak", "gang", "", false), "node-0"),
            kExistingAntiAffinityMismatch);
  EXPECT_EQ(PodAntiAffinityMismatch(view, AffinityPod("ns", "gang", "", false, "other"), "node-0"),
            "");
}

TEST(PodAffinityTest, ANodeWithoutTheTopologyLabelIsInNoDomain) {
  View view;
  view.nodes["bare"] = AffinityNode("bare", /*labelled=*/false);
  view.pods["default/r0"] = AffinityPod("r0", "gang", "bare", true);
  EXPECT_EQ(PodAntiAffinityMismatch(view, AffinityPod("r1", "gang", "", true), "bare"), "");
}

}  // namespace
}  // namespace canhazgpu::clusterview
