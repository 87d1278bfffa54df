#include "clusterview/explain.h"

#include "absl/time/time.h"
#include "clusterview/test_view.h"
#include "dra/capacity.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using namespace testing;  // NOLINT: the view builders

const TimePoint kNow = At("2026-11-24T11:00:00Z");

class ExplainTest : public ::testing::Test {
 protected:
  void SetUp() override { AddClasses(view_); }

  // A pending pod "train" of alice whose one claim has `requests`.
  Diagnosis Pending(std::vector<json> requests, std::vector<json> constraints = {}) {
    Put(view_, Claim("default", "train-gpu", requests, constraints));
    Put(view_, Pod("default", "train", "train-gpu", "alice"));
    return ExplainPod(view_, view_.pods.at("default/train"), kNow);
  }

  View view_;
};

TEST_F(ExplainTest, SelectorThatMatchesNothingIsNamedWithItsCounts) {
  AddGpuNode(view_, "node-a", 4);
  AddGpuNode(view_, "node-b", 4);
  Diagnosis d = Pending({Request(
      "gpu", kGpuClass, 1,
      {"device.attributes[\"gpu.canhazgpu.dev\"].productName == \"NVIDIA H100 80GB HBM3\""})});
  EXPECT_TRUE(d.pending);
  EXPECT_TRUE(d.never);  // no device anywhere matches
  EXPECT_THAT(d.summary, StartsWith("can never run: no node can allocate request gpu (1 x "
                                    "gpu.canhazgpu.dev where productName) even with every "
                                    "device free: node-a and node-b have none matching "
                                    "productName"));
  const std::string text = d.Text();
  EXPECT_THAT(text, HasSubstr("node-a, node-b: has none matching productName\n"));
  EXPECT_THAT(text, HasSubstr("request gpu: wants 1; 0 of 4 devices match, 0 free"));
  EXPECT_THAT(text, HasSubstr("request selector rejected 4: device.attributes"));
  EXPECT_THAT(text, Not(HasSubstr("preemption")));  // nothing is taken
}

// Issue 33: "fits on node-1 now" and then the scheduler took node-0. Every
// node it fits on is named, in name order - and not one that is too small.
TEST_F(ExplainTest, FitsNamesEveryNodeItFitsOn) {
  AddGpuNode(view_, "node-small", 1);
  AddGpuNode(view_, "node-z", 8);
  AddGpuNode(view_, "node-a", 4);
  Diagnosis d = Pending({Request("gpu", kGpuClass, 2)});
  EXPECT_EQ(d.summary, "fits on node-a, node-z now; the scheduler has not placed it yet");
}

TEST_F(ExplainTest, TooFewFreeNamesTheHoldersWithTheirUsersAndSaysPreemptionCannotHelp) {
  AddGpuNode(view_, "node-a", 2);
  AddGpuNode(view_, "node-b", 2);
  AddRunning(view_, "bert", "node-a", {"gpu-0"}, "bob");
  AddRunning(view_, "llama", "node-b", {"gpu-0", "gpu-1"}, "carol");
  Diagnosis d = Pending({Request("gpu", kGpuClass, 2)});
  EXPECT_TRUE(d.pending);
  EXPECT_FALSE(d.never);
  EXPECT_EQ(d.summary,
            "no node can allocate request gpu (2 x gpu.canhazgpu.dev): node-a has 1 (gpu-0 taken "
            "by team/bert-gpu (pod bert, user bob (from label))), node-b has none free (gpu-0, "
            "gpu-1 taken by team/llama-gpu (pod llama, user carol (from label)))");
  EXPECT_TRUE(d.devices_taken);
  EXPECT_THAT(d.Text(), HasSubstr(kNoPreemption));
  ASSERT_EQ(d.nodes.size(), 2u);
  EXPECT_EQ(d.nodes[0].node, "node-a");  // closest first
  ASSERT_EQ(d.nodes[0].taken.size(), 1u);
  EXPECT_EQ(d.nodes[0].taken[0].user, "bob");
  EXPECT_EQ(d.nodes[0].taken[0].claim, "team/bert-gpu");
}

TEST_F(ExplainTest, MigPairOnOneParentIsAnUnmetMatchAttribute) {
  AddNode(
      view_, "node-a",
      dra::BuildDevicePool({dra::testing::TestMigGpu(0), dra::testing::TestMigGpu(1)}, "node-a"));
  // One 1g.5gb taken on each GPU: two are free, but on different GPUs.
  json a = Allocate(Claim("team", "a", {Request("mig", kMigClass)}), "node-a",
                    {"gpu-0-mig-1g5gb-19-0"}, "a");
  json b = Allocate(Claim("team", "b", {Request("mig", kMigClass)}), "node-a",
                    {"gpu-1-mig-1g5gb-19-1"}, "b");
  Put(view_, a);
  Put(view_, b);
  Diagnosis d =
      Pending({Request("mig", kMigClass, 2,
                       {"device.attributes[\"gpu.canhazgpu.dev\"].profile == \"1g.5gb\""})},
              {{{"matchAttribute", "gpu.canhazgpu.dev/parentUUID"}}});
  EXPECT_FALSE(d.never);  // both on one GPU fit once a or b ends
  EXPECT_THAT(d.summary, HasSubstr("node-a has enough free devices, but no set of them meets "
                                   "matchAttribute gpu.canhazgpu.dev/parentUUID"));
  EXPECT_THAT(d.Text(),
              HasSubstr("constraint matchAttribute gpu.canhazgpu.dev/parentUUID could not be met"));
}

TEST_F(ExplainTest, DistinctAttributeThatNoSetMeetsIsNever) {
  AddGpuNode(view_, "node-a", 2);
  // Both GPUs share a product name, so two distinct ones never exist.
  Diagnosis d = Pending({Request("gpu", kGpuClass, 2)},
                        {{{"distinctAttribute", "gpu.canhazgpu.dev/productName"}}});
  EXPECT_TRUE(d.never);
  EXPECT_THAT(d.summary,
              HasSubstr("no set of them meets distinctAttribute gpu.canhazgpu.dev/productName"));
}

TEST_F(ExplainTest, TaintedDeviceIsNamedWithItsTaint) {
  dra::DevicePool pool =
      dra::BuildDevicePool({dra::testing::TestGpu(0), dra::testing::TestGpu(1)}, "node-a");
  pool.devices[1].taints = {{"gpu.canhazgpu.dev/xid", "79", "NoSchedule"}};
  AddNode(view_, "node-a", pool);
  Diagnosis d = Pending({Request("gpu", kGpuClass, 2)});
  EXPECT_FALSE(d.never);  // a taint may go away
  EXPECT_THAT(d.summary, HasSubstr("node-a has 1 (gpu-1 tainted: XID 79)"));

  // Tolerated, it fits.
  view_.claims["default/train-gpu"]["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = {
      {{"key", "gpu.canhazgpu.dev/xid"}, {"operator", "Exists"}}};
  d = ExplainPod(view_, view_.pods.at("default/train"), kNow);
  EXPECT_EQ(d.summary, "fits on node-a now; the scheduler has not placed it yet");
}

// node-a with two A100s, gpu-1 withdrawn from the slice by the driver, and
// its NodeGpuStatus saying of gpu-0 and gpu-1 what `gpu0` and `gpu1` add.
void AddNodeWithGpu1Withdrawn(View& view, const json& gpu0, const json& gpu1) {
  dra::DevicePool pool =
      dra::BuildDevicePool({dra::testing::TestGpu(0), dra::testing::TestGpu(1)}, "node-a");
  pool.devices.pop_back();
  AddNode(view, "node-a", pool);
  json devices = json::parse(R"([
      {"name": "gpu-0", "type": "gpu", "uuid": "GPU-00000000", "index": 0,
       "productName": "NVIDIA A100-SXM4-40GB"},
      {"name": "gpu-1", "type": "gpu", "uuid": "GPU-00000001", "index": 1,
       "productName": "NVIDIA A100-SXM4-40GB"}])");
  devices[0].update(gpu0);
  devices[1].update(gpu1);
  view.node_gpu_statuses["node-a"] = GpuStatusOf({{"apiVersion", "canhazgpu.dev/v1alpha1"},
                                                  {"kind", "NodeGpuStatus"},
                                                  {"metadata", {{"name", "node-a"}}},
                                                  {"status", {{"devices", devices}}}});
}

TEST_F(ExplainTest, GpuHeldLocallyIsNamedFromTheNodeGpuStatus) {
  // The driver withdrew gpu-1 from the slice: alice holds it with canhazgpu.
  AddNodeWithGpu1Withdrawn(view_, {{"state", "Free"}},
                           json::parse(R"({"state": "Held", "held": {"user": "alice",
                               "kind": "Run", "since": "2026-11-24T10:02:00Z"}})"));
  Diagnosis d = Pending({Request("gpu", kGpuClass, 2)});
  EXPECT_FALSE(d.never);  // the slice alone would say never: it has one GPU
  EXPECT_THAT(d.summary,
              HasSubstr("node-a has 1 (gpu-1 held by alice since 10:02 UTC (canhazgpu))"));
  EXPECT_THAT(d.Text(), HasSubstr(kNoPreemption));
  ASSERT_EQ(d.nodes[0].held.size(), 1u);
  EXPECT_TRUE(d.nodes[0].held[0].checked);
  EXPECT_EQ(d.Json()["nodes"][0]["held"][0]["user"], "alice");
}

// The driver withdrew gpu-1 for dave, waiting in the host's canhazgpu
// queue: named as the waiter it is kept for, not as a holder.
TEST_F(ExplainTest, GpuKeptForALocalWaiterIsNamedAsKept) {
  AddNodeWithGpu1Withdrawn(
      view_, json::parse(R"({"state": "Free", "keptFor": [{"user": "erin", "memory": "10Gi"}]})"),
      json::parse(R"({"state": "Free",
                      "keptFor": [{"user": "dave", "since": "2026-11-24T10:02:00Z"}]})"));
  Diagnosis d = Pending({Request("gpu", kGpuClass, 2)});
  EXPECT_FALSE(d.never);
  EXPECT_THAT(d.summary, HasSubstr("node-a has 1 (gpu-1 kept for dave, waiting since 10:02 UTC "
                                   "(canhazgpu queue))"));
  ASSERT_EQ(d.nodes[0].held.size(), 1u) << "memory kept for a share does not withhold gpu-0";
  EXPECT_EQ(d.nodes[0].held[0].state, "Kept");
  EXPECT_EQ(d.Json()["nodes"][0]["held"][0]["user"], "dave");
}

TEST_F(ExplainTest, HeldDeviceWithNothingLikeItPublishedIsListedAndKeepsNeverOff) {
  AddNode(view_, "node-a", dra::BuildDevicePool({}, "node-a"));  // every GPU withdrawn
  view_.node_gpu_statuses["node-a"] = GpuStatusOf({{"status",
                                                    {{"devices",
                                                      {{{"name", "gpu-0"},
                                                        {"type", "gpu"},
                                                        {"state", "InUse"},
                                                        {"usage", {{"users", {"dave"}}}}}}}}}});
  Diagnosis d = Pending({Request("gpu", kGpuClass, 1)});
  EXPECT_FALSE(d.never);
  EXPECT_THAT(d.summary, HasSubstr("node-a publishes no devices; not published, so not checked: "
                                   "gpu-0 in use outside any reservation by dave"));
}

// A local reserve took the node's only GPU and the driver withdrew it; the
// NodeGpuStatus, written at most once a second, still says Free.
TEST_F(ExplainTest, AFreeDeviceTheSliceNoLongerPublishesKeepsNeverOff) {
  AddNode(view_, "node-a", dra::BuildDevicePool({}, "node-a"));
  view_.node_gpu_statuses["node-a"] = GpuStatusOf(
      {{"status", {{"devices", {{{"name", "gpu-0"}, {"type", "gpu"}, {"state", "Free"}}}}}}});
  EXPECT_FALSE(Pending({Request("gpu", kGpuClass, 1)}).never);
  // Published and free, yet too few: never.
  AddGpuNode(view_, "node-b", 1);
  view_.node_gpu_statuses.erase("node-a");
  EXPECT_TRUE(Pending({Request("gpu", kGpuClass, 2)}).never);
}

TEST_F(ExplainTest, CelRuntimeErrorCarriesTheHasHint) {
  AddGpuNode(view_, "node-a", 1);
  Diagnosis d = Pending(
      {Request("gpu", kGpuClass, 1, {"device.attributes[\"gpu.canhazgpu.dev\"].nosuch == 1"})});
  EXPECT_TRUE(d.never);
  EXPECT_THAT(d.summary, HasSubstr("resourceclaim default/train-gpu cannot be allocated"));
  EXPECT_THAT(d.summary, StartsWith("can never run: "));
  EXPECT_THAT(d.summary, HasSubstr("CEL runtime error"));
  EXPECT_THAT(d.summary, HasSubstr("has()"));
}

TEST_F(ExplainTest, CountLargerThanAnyNodeIsNever) {
  AddGpuNode(view_, "node-a", 2);
  AddGpuNode(view_, "node-b", 1);
  Diagnosis d = Pending({Request("gpu", kGpuClass, 3)});
  EXPECT_TRUE(d.never);
  EXPECT_THAT(d.summary, StartsWith("can never run: no node can allocate request gpu (3 x "
                                    "gpu.canhazgpu.dev) even with every device free: node-a has "
                                    "only 2 matching, node-b has only 1 matching"));
  EXPECT_THAT(d.Text(), StartsWith("pod default/train is pending: can never run: no node"));
}

TEST_F(ExplainTest, ScheduledPodSaysWhereAndWithWhat) {
  AddGpuNode(view_, "node-a", 2);
  AddRunning(view_, "bert", "node-a", {"gpu-0", "gpu-1"}, "bob");
  Diagnosis d = ExplainPod(view_, view_.pods.at("team/bert"), kNow);
  EXPECT_FALSE(d.pending);
  EXPECT_EQ(d.node, "node-a");
  EXPECT_EQ(d.summary, "runs on node-a with gpu-0, gpu-1");
  EXPECT_EQ(d.Text().substr(0, 41), "pod team/bert: runs on node-a with gpu-0,");

  Diagnosis c = ExplainClaim(view_, view_.claims.at("team/bert-gpu"), kNow);
  EXPECT_FALSE(c.pending);
  EXPECT_EQ(c.summary, "allocated on node-a with gpu-0, gpu-1, for pod bert");
}

TEST_F(ExplainTest, NodesThePodMayNotUseAreNamed) {
  AddGpuNode(view_, "node-a", 1);
  AddGpuNode(view_, "node-b", 1);
  view_.nodes["node-a"]["spec"]["unschedulable"] = true;
  AddRunning(view_, "bert", "node-b", {"gpu-0"}, "bob");
  Diagnosis d = Pending({Request("gpu", kGpuClass, 1)});
  EXPECT_THAT(d.summary, HasSubstr("node-b has none free (gpu-0 taken by team/bert-gpu"));
  EXPECT_THAT(d.summary, HasSubstr("node-a is cordoned (unschedulable)"));
  EXPECT_EQ(d.nodes.back().node, "node-a");  // the tried node comes first
}

TEST_F(ExplainTest, PendingClaimOnItsOwn) {
  AddGpuNode(view_, "node-a", 1);
  AddRunning(view_, "bert", "node-a", {"gpu-0"}, "bob");
  json claim = Claim("default", "spare", {Request("gpu", kGpuClass, 1)});
  Diagnosis d = ExplainClaim(view_, claim, kNow);
  EXPECT_TRUE(d.pending);
  EXPECT_EQ(d.object, "resourceclaim default/spare");
  EXPECT_THAT(d.summary, HasSubstr("node-a has none free (gpu-0 taken by team/bert-gpu (pod "
                                   "bert, user bob (from label)))"));
}

TEST_F(ExplainTest, TemplateNotMadeIntoAClaimYetIsExplainedFromTheTemplate) {
  AddGpuNode(view_, "node-a", 1);
  view_.templates["default/big"] = {
      {"metadata", {{"namespace", "default"}, {"name", "big"}}},
      {"spec", {{"spec", {{"devices", {{"requests", {Request("gpu", kGpuClass, 4)}}}}}}}}};
  json pod = Pod("default", "train", "");
  pod["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimTemplateName", "big"}}};
  Diagnosis d = ExplainPod(view_, pod, kNow);
  EXPECT_TRUE(d.never);
  EXPECT_THAT(d.summary, HasSubstr("node-a has only 1 matching"));
  EXPECT_THAT(d.asks[0], HasSubstr("default/big (template): gpu: 4 x gpu.canhazgpu.dev"));
}

TEST_F(ExplainTest, ClaimSpecBeforeCreation) {
  AddGpuNode(view_, "node-a", 2);
  auto spec = [](json request) {
    return json{{"devices", {{"requests", json::array({request})}}}};
  };

  auto bad = ExplainClaimSpec(
      view_, spec(Request("gpu", kGpuClass, 1, {"device.attributes[\"x\"].y ==="})), "default",
      kNow);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_THAT(bad.status().message(), HasSubstr("request gpu: selector 1:"));

  auto unknown =
      ExplainClaimSpec(view_, spec(Request("gpu", "gpu.nvidia.com", 1)), "default", kNow);
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_TRUE(unknown->never);
  EXPECT_EQ(unknown->summary,
            "can never run: device class 'gpu.nvidia.com' does not exist in the cluster");

  auto too_many = ExplainClaimSpec(view_, spec(Request("gpu", kGpuClass, 3)), "default", kNow);
  ASSERT_TRUE(too_many.ok()) << too_many.status();
  EXPECT_TRUE(too_many->never);

  auto fine = ExplainClaimSpec(view_, spec(Request("gpu", kGpuClass, 2)), "default", kNow);
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_FALSE(fine->never);
  EXPECT_EQ(fine->summary, "fits on node-a now; the scheduler has not placed it yet");
}

TEST_F(ExplainTest, IdenticalNodesAreGroupedAndJsonHasTheDocumentedFields) {
  for (const char* n : {"node-a", "node-b", "node-c"}) AddGpuNode(view_, n, 1);
  Diagnosis d = Pending({Request("gpu", kMigClass, 1)});
  EXPECT_THAT(d.Text(), HasSubstr("  node-a, node-b, node-c: has none matching class "
                                  "mig.canhazgpu.dev\n"));
  EXPECT_THAT(d.summary, HasSubstr("3 nodes (node-a, ...) have none matching class"));
  nlohmann::ordered_json j = d.Json();
  for (const char* field : {"object", "pending", "never", "summary", "node", "devices", "asks",
                            "preemption", "nodes", "problems"})
    EXPECT_TRUE(j.contains(field)) << field;
  EXPECT_EQ(j["nodes"][0]["allocator"]["requests"][0]["selectors"][0]["rejected"], 1);
}

// Nodes alike in brief (devices counted by kind) share a line; the closest
// is said in full beneath, with the held GPUs of one holder together.
TEST_F(ExplainTest, ManyBlockedDevicesAreCountedByKindAndAlikeNodesGrouped) {
  for (const char* node : {"node-a", "node-b"}) {
    dra::DevicePool pool = dra::BuildDevicePool(
        {dra::testing::TestGpu(0), dra::testing::TestGpu(1), dra::testing::TestGpu(2)}, node);
    pool.devices[2].taints = {{"gpu.canhazgpu.dev/xid", "79", "NoSchedule"}};
    AddNode(view_, node, pool);
    json devices = json::array();
    for (int g = 3; g < 5; ++g) {
      devices.push_back({{"name", StrCat("gpu-", g)},
                         {"type", "gpu"},
                         {"productName", "NVIDIA A100-SXM4-40GB"},
                         {"state", "Held"},
                         {"held", {{"user", "carol"}, {"since", "2026-11-24T10:02:00Z"}}}});
    }
    view_.node_gpu_statuses[node] = GpuStatusOf({{"status", {{"devices", devices}}}});
    AddRunning(view_, StrCat("bert-", node), node, {"gpu-0"}, "bob");
    AddRunning(view_, StrCat("ernie-", node), node, {"gpu-1"}, "bob");
  }
  Diagnosis d = Pending({Request("gpu", kGpuClass, 1)});
  const std::string brief =
      "has none free (2 taken by claims of bob (from label), 2 held by carol (canhazgpu), 1 "
      "tainted: XID 79)";
  EXPECT_EQ(d.nodes[0].brief, brief);
  EXPECT_THAT(d.nodes[0].phrase,
              HasSubstr("gpu-3, gpu-4 held by carol since 10:02 UTC (canhazgpu), gpu-2 tainted"));
  EXPECT_THAT(d.summary, HasSubstr(StrCat("node-a and node-b ", "have", brief.substr(3))));
  const std::string text = d.Text();
  EXPECT_THAT(text, HasSubstr(StrCat("  node-a, node-b: ", brief,
                                     "\n    node-a: has none free "
                                     "(gpu-0 taken by team/bert-node-a-gpu (pod bert-node-a, "
                                     "user bob (from label)), gpu-1 taken by")));
}

TEST_F(ExplainTest, PodWithoutClaimsIsNotHeldBackByDevices) {
  AddGpuNode(view_, "node-a", 1);
  json pod = Pod("default", "web", "");
  pod["spec"].erase("resourceClaims");
  Diagnosis d = ExplainPod(view_, pod, kNow);
  EXPECT_TRUE(d.pending);
  EXPECT_FALSE(d.never);
  EXPECT_EQ(d.summary, "it uses no resource claims, so no device keeps it waiting");
}

TEST(SelectorTopicTest, NamesTheAttributesItReads) {
  EXPECT_EQ(SelectorTopic("device.capacity[\"gpu.canhazgpu.dev\"].memory.compareTo("
                          "quantity(\"40Gi\")) >= 0 && "
                          "device.attributes[\"gpu.canhazgpu.dev\"].productName == \"x\""),
            "productName, memory");
  EXPECT_EQ(SelectorTopic("true"), "true");
}

}  // namespace
}  // namespace canhazgpu::clusterview

namespace canhazgpu::clusterview {
namespace {

using namespace testing;  // NOLINT: the view builders

// Issue 34: a GPU shared by memory names who holds how much and what is left.
TEST(ExplainSharesTest, SharedGpuWithoutRoomNamesTheSharesAndTheirUsers) {
  View view;
  AddClasses(view);
  AddNode(view, "node-1",
          dra::BuildDevicePool({dra::testing::TestGpu(0)}, "node-1", {.sharing = true}));
  for (const auto& [name, user, amount] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"bert", "bob", "30Gi"},
                                                                      {"t5", "", "8Gi"}}) {
    json claim = Allocate(Claim("team", name + "-gpu", {Request("gpu", kGpuClass, 1)}), "node-1",
                          {"gpu-0"}, name);
    claim["status"]["allocation"]["devices"]["results"][0]["shareID"] = dra::NewShareId();
    claim["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = {
        {"memory", amount}};
    json pod = Pod("team", name, name + "-gpu", user);
    pod["spec"]["nodeName"] = "node-1";
    pod["status"]["phase"] = "Running";
    Put(view, claim);
    Put(view, pod);
  }
  json request = Request("gpu", kGpuClass, 1);
  request["exactly"]["capacity"]["requests"]["memory"] = "4Gi";
  Put(view, Claim("default", "train-gpu", {request}));
  Put(view, Pod("default", "train", "train-gpu", "alice"));
  Diagnosis d = ExplainPod(view, view.pods.at("default/train"), kNow);
  EXPECT_TRUE(d.pending);
  EXPECT_FALSE(d.never);
  // 40448Mi - 38Gi = 1536Mi left.
  EXPECT_THAT(d.summary, HasSubstr("node-1 has none free (gpu-0 has 1536Mi of 40448Mi left (bob "
                                   "30Gi, team/t5-gpu 8Gi); needs 4Gi)"));
  EXPECT_TRUE(d.devices_taken);
  EXPECT_THAT(d.Text(), HasSubstr("gpu-0 has 1536Mi of 40448Mi left"));
  EXPECT_THAT(d.Text(), HasSubstr("gpu: 1 x gpu.canhazgpu.dev with memory 4Gi"));
}

}  // namespace
}  // namespace canhazgpu::clusterview

namespace canhazgpu::clusterview {
namespace {

using namespace testing;  // NOLINT: the view builders

// A share whose consumedCapacity cannot be read counts as holding the whole
// GPU: never count less than is held.
TEST(ExplainSharesTest, AnUnreadableShareHoldsTheWholeGpu) {
  View view;
  AddClasses(view);
  AddNode(view, "node-1",
          dra::BuildDevicePool({dra::testing::TestGpu(0)}, "node-1", {.sharing = true}));
  json claim = Allocate(Claim("team", "odd-gpu", {Request("gpu", kGpuClass, 1)}), "node-1",
                        {"gpu-0"}, "odd");
  claim["status"]["allocation"]["devices"]["results"][0]["shareID"] = dra::NewShareId();
  claim["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = {{"memory", "lots"}};
  Put(view, claim);
  json request = Request("gpu", kGpuClass, 1);
  request["exactly"]["capacity"]["requests"]["memory"] = "1Gi";
  Put(view, Claim("default", "train-gpu", {request}));
  Put(view, Pod("default", "train", "train-gpu", "alice"));
  Diagnosis d = ExplainPod(view, view.pods.at("default/train"), kNow);
  EXPECT_TRUE(d.pending);
  EXPECT_THAT(d.summary, HasSubstr("gpu-0 taken by team/odd-gpu"));
}

}  // namespace
}  // namespace canhazgpu::clusterview
