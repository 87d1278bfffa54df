// The control plane against the simulated API server over real HTTP: the
// claim controller, the scheduler stand-in, and what a user waiting for a
// pod is told.
#include "simcluster/control_plane.h"

#include <chrono>
#include <functional>
#include <set>
#include <thread>

#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simcluster/testing/control_plane_fixture.h"

namespace canhazgpu::simcluster {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kGpuClass[] = "gpu.canhazgpu.dev";
constexpr char kMigClass[] = "mig.canhazgpu.dev";

json Request(const std::string& cls, json extra = json::object()) {
  json exactly = {{"deviceClassName", cls}};
  exactly.update(extra);
  return {{"name", "gpu"}, {"exactly", exactly}};
}

class ControlPlaneTest : public testing::ControlPlaneFixture {
 protected:
  void SetUp() override {
    ControlPlaneFixture::SetUp();
    // deploy/deviceclasses.yaml
    for (const char* type : {"gpu", "mig"}) {
      json cls = json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "spec": {"selectors": [{"cel": {"expression": ""}}]}})");
      cls["metadata"]["name"] = std::string(type) + ".canhazgpu.dev";
      cls["spec"]["selectors"][0]["cel"]["expression"] =
          std::string(
              "device.driver == \"gpu.canhazgpu.dev\" && "
              "device.attributes[\"gpu.canhazgpu.dev\"].type == \"") +
          type + "\"";
      ASSERT_TRUE(client_->CreateObject(kube::kDeviceClasses, "", cls).ok());
    }
  }
  // The node's slice, shaped as the driver publishes it.
  void AddSlice(const std::string& node, const std::vector<GpuInfo>& gpus,
                std::function<void(json&)> mutate = nullptr) {
    json slice = dra::ResourceSliceJson(dra::BuildDevicePool(gpus, node));
    if (mutate) mutate(slice);
    auto created = client_->CreateObject(kube::kResourceSlices, "", slice);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  void AddTemplate(const std::string& name, json request) {
    json t = {{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceClaimTemplate"},
              {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec",
               {{"metadata", {{"labels", {{"team", "ml"}}}}},
                {"spec", {{"devices", {{"requests", json::array({request})}}}}}}}};
    auto created = client_->CreateObject(kube::kResourceClaimTemplates, "default", t);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  void AddClaim(const std::string& name, json request) {
    json c = {{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceClaim"},
              {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec", {{"devices", {{"requests", json::array({request})}}}}}};
    auto created = client_->CreateObject(kube::kResourceClaims, "default", c);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  // A pod whose one claim comes from `template_name` (or is the existing
  // claim `claim_name`); none when both are empty.
  void AddPod(const std::string& name, const std::string& template_name,
              const std::string& claim_name = "", json spec_extra = json::object()) {
    json spec = {{"containers", {{{"name", "main"}, {"image", "busybox"}}}}};
    if (!template_name.empty())
      spec["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimTemplateName", template_name}}};
    if (!claim_name.empty())
      spec["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimName", claim_name}}};
    spec.update(spec_extra);
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "default"}}},
                {"spec", spec}};
    auto created = client_->CreateObject(kube::kPods, "default", pod);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  json WaitBound(const std::string& pod) {
    return WaitFor(kube::kPods, pod, [](const json& p) {
      return !p.value("/spec/nodeName"_json_pointer, std::string()).empty();
    });
  }

  // The PodScheduled=False message, once there is one.
  std::string WaitUnschedulable(const std::string& pod) {
    json p = WaitFor(kube::kPods, pod, [](const json& p) {
      for (const json& c : p.value("/status/conditions"_json_pointer, json::array()))
        if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") return true;
      return false;
    });
    for (const json& c : p.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "PodScheduled") {
        EXPECT_EQ(c.value("reason", ""), "Unschedulable");
        return c.value("message", "");
      }
    }
    return "";
  }

  // The name of the claim generated for the pod's "gpu" entry.
  std::string ClaimOf(const std::string& pod) {
    json p = WaitFor(kube::kPods, pod, [](const json& p) {
      return !p.value("/status/resourceClaimStatuses"_json_pointer, json::array()).empty();
    });
    return p.value("/status/resourceClaimStatuses/0/resourceClaimName"_json_pointer, std::string());
  }

  static std::vector<std::string> Devices(const json& claim) {
    std::vector<std::string> out;
    for (const json& r :
         claim.value("/status/allocation/devices/results"_json_pointer, json::array()))
      out.push_back(r.value("device", ""));
    return out;
  }

  // An object owned by `owner` (kind Pod, name and uid), created in
  // "default".
  json AddOwned(const kube::ResourceRef& ref, json object, const std::string& owner,
                const std::string& owner_uid) {
    object["metadata"]["namespace"] = "default";
    object["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                              {"kind", "Pod"},
                                              {"name", owner},
                                              {"uid", owner_uid},
                                              {"controller", true},
                                              {"blockOwnerDeletion", true}}};
    auto created = client_->CreateObject(ref, "default", object);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.value_or(json());
  }
  json ConfigMap(const std::string& name) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}}},
            {"data", {{"k", "v"}}}};
  }
  json Template(const std::string& name) {
    return {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaimTemplate"},
            {"metadata", {{"name", name}}},
            {"spec", {{"spec", {{"devices", {{"requests", json::array({Request(kGpuClass)})}}}}}}}};
  }
};

TEST_F(ControlPlaneTest, TemplateClaimIsGeneratedAllocatedReservedAndThePodBound) {
  AddNode("node-0");
  AddSlice("node-0", {dra::testing::TestGpu(0), dra::testing::TestGpu(1)});
  AddTemplate("one-gpu", Request(kGpuClass));
  StartPlane();
  AddPod("train", "one-gpu");

  const std::string name = ClaimOf("train");
  EXPECT_THAT(name, StartsWith("train-gpu-"));
  json pod = WaitBound("train");
  EXPECT_EQ(pod["spec"]["nodeName"], "node-0");
  json claim = Get(kube::kResourceClaims, name);
  EXPECT_EQ(claim["metadata"]["generateName"], "train-gpu-");
  EXPECT_EQ(claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"], "gpu");
  EXPECT_EQ(claim["metadata"]["labels"]["team"], "ml");
  const json owner = claim["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "Pod");
  EXPECT_EQ(owner["name"], "train");
  EXPECT_EQ(owner["uid"], pod["metadata"]["uid"]);
  EXPECT_EQ(owner["controller"], true);
  EXPECT_EQ(owner["blockOwnerDeletion"], true);
  EXPECT_EQ(claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"], kGpuClass);
  EXPECT_THAT(claim["metadata"]["finalizers"],
              ::testing::Contains("resource.kubernetes.io/delete-protection"));

  const json result = claim["status"]["allocation"]["devices"]["results"][0];
  EXPECT_EQ(result["request"], "gpu");
  EXPECT_EQ(result["driver"], "gpu.canhazgpu.dev");
  EXPECT_EQ(result["pool"], "node-0");
  EXPECT_EQ(result["device"], "gpu-0");
  EXPECT_EQ(claim["status"]["allocation"]["nodeSelector"],
            json::parse(R"({"nodeSelectorTerms": [{"matchFields": [
              {"key": "metadata.name", "operator": "In", "values": ["node-0"]}]}]})"));
  EXPECT_EQ(claim["status"]["reservedFor"],
            json::parse(R"([{"resource": "pods", "name": "train", "uid": ")" +
                        pod["metadata"]["uid"].get<std::string>() + R"("}])"));
}

TEST_F(ControlPlaneTest, SecondPodWaitsWithTheReasonAndBindsWhenTheFirstIsDone) {
  AddNode("node-0");
  AddSlice("node-0", {dra::testing::TestGpu(0), dra::testing::TestGpu(1)});
  AddTemplate("all-gpus", Request(kGpuClass, {{"allocationMode", "All"}}));
  StartPlane();
  AddPod("first", "all-gpus");
  WaitBound("first");
  const std::string first_claim = ClaimOf("first");
  AddPod("second", "all-gpus");

  const std::string message = WaitUnschedulable("second");
  EXPECT_THAT(message, StartsWith("0/1 nodes are available: 1 cannot allocate all claims. "
                                  "preemption: 0/1 nodes are available: 1 Preemption is not "
                                  "helpful for scheduling.\n"));
  EXPECT_THAT(message, HasSubstr("cannot be allocated on node-0, the closest node:\n"));
  EXPECT_THAT(message, HasSubstr("request gpu: wants all matching devices; 2 of 2 on node-0 "
                                 "match its selectors, 0 of them free"));
  EXPECT_THAT(message, HasSubstr("gpu-0 is taken by default/" + first_claim + " (pod first)"));
  EXPECT_TRUE(Get(kube::kPods, "second")["spec"].value("nodeName", "").empty());

  // The event a user sees in kubectl describe (written after the pod's
  // condition, so waited for).
  json event;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (event.is_null() && std::chrono::steady_clock::now() < deadline) {
    auto events = client_->List(kube::kEvents, "default");
    ASSERT_TRUE(events.ok());
    for (const json& e : (*events)["items"]) {
      if (e["reason"] == "FailedScheduling" && e["involvedObject"]["name"] == "second") event = e;
    }
    if (event.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(event.is_null()) << "no FailedScheduling event for pod second";
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_THAT(event["message"].get<std::string>(), StartsWith("0/1 nodes are available"));

  SetPhase("first", "Succeeded");
  json freed = WaitFor(kube::kResourceClaims, first_claim, [](const json& c) {
    return !c.contains("status") || !c["status"].contains("allocation");
  });
  EXPECT_FALSE(freed["status"].contains("reservedFor")) << freed.dump();
  EXPECT_EQ(WaitBound("second")["spec"]["nodeName"], "node-0");
  EXPECT_THAT(Devices(Get(kube::kResourceClaims, ClaimOf("second"))),
              ::testing::ElementsAre("gpu-0", "gpu-1"));
}

TEST_F(ControlPlaneTest, SelectorThatMatchesNothingIsNamed) {
  AddNode("node-0");
  AddSlice("node-0", {dra::testing::TestGpu(0), dra::testing::TestGpu(1)});
  AddTemplate("h200", Request(kGpuClass, {{"selectors",
                                           {{{"cel",
                                              {{"expression",
                                                "device.attributes['gpu.canhazgpu.dev']."
                                                "productName == 'NVIDIA H200'"}}}}}}}));
  StartPlane();
  AddPod("big", "h200");
  const std::string message = WaitUnschedulable("big");
  EXPECT_THAT(message,
              HasSubstr("request selector rejected 2: device.attributes['gpu.canhazgpu.dev']"
                        ".productName == 'NVIDIA H200'"));
  EXPECT_THAT(message, HasSubstr("no device could ever satisfy this request"));
}

TEST_F(ControlPlaneTest, TaintedDeviceOnlyForAPodThatToleratesIt) {
  AddNode("node-0");
  AddSlice("node-0", {dra::testing::TestGpu(0)}, [](json& slice) {
    slice["spec"]["devices"][0]["taints"] = {
        {{"key", "gpu.canhazgpu.dev/xid"}, {"value", "79"}, {"effect", "NoSchedule"}}};
  });
  AddTemplate("plain", Request(kGpuClass));
  AddTemplate("tolerant",
              Request(kGpuClass, {{"tolerations",
                                   {{{"key", "gpu.canhazgpu.dev/xid"}, {"operator", "Exists"}}}}}));
  StartPlane();
  AddPod("careful", "plain");
  EXPECT_THAT(WaitUnschedulable("careful"),
              HasSubstr("gpu-0 has the taint gpu.canhazgpu.dev/xid=79:NoSchedule, which the "
                        "request does not tolerate"));
  AddPod("brave", "tolerant");
  WaitBound("brave");
  json claim = Get(kube::kResourceClaims, ClaimOf("brave"));
  EXPECT_EQ(claim["status"]["allocation"]["devices"]["results"][0]["tolerations"][0]["key"],
            "gpu.canhazgpu.dev/xid");
}

TEST_F(ControlPlaneTest, NodeSelectorTaintsAndReadinessAreRespected) {
  AddNode("node-a", {{"gpu", "a100"}});
  AddNode("node-h", {{"gpu", "h100"}});
  AddNode("node-down", {{"gpu", "h100"}}, /*ready=*/false);
  AddNode("node-tainted", {{"gpu", "h100"}}, true,
          {{{"key", "dedicated"}, {"value", "infra"}, {"effect", "NoSchedule"}}});
  for (const char* n : {"node-a", "node-h", "node-down", "node-tainted"})
    AddSlice(n, {dra::testing::TestGpu(0)});
  AddTemplate("one-gpu", Request(kGpuClass));
  StartPlane();
  AddPod("picky", "one-gpu", "", {{"nodeSelector", {{"gpu", "h100"}}}});
  EXPECT_EQ(WaitBound("picky")["spec"]["nodeName"], "node-h");
  EXPECT_THAT(Devices(Get(kube::kResourceClaims, ClaimOf("picky"))),
              ::testing::ElementsAre("gpu-0"));

  AddPod("nowhere", "one-gpu", "", {{"nodeSelector", {{"gpu", "b200"}}}});
  EXPECT_THAT(WaitUnschedulable("nowhere"),
              StartsWith("0/4 nodes are available: 1 node(s) had untolerated taint "
                         "{dedicated: infra}, 1 node(s) had untolerated taint "
                         "{node.kubernetes.io/not-ready: }, 2 node(s) didn't match Pod's node "
                         "affinity/selector."));
}

TEST_F(ControlPlaneTest, RequiredNodeAffinityOnTheNodeNamePicksThatNode) {
  // As `k8shazgpu vllm run` pins a pod to the node whose cache has its mirror.
  AddNode("node-a");
  AddNode("node-b");
  for (const char* n : {"node-a", "node-b"}) AddSlice(n, {dra::testing::TestGpu(0)});
  AddTemplate("one-gpu", Request(kGpuClass));
  StartPlane();
  const json field = {
      {"key", "metadata.name"}, {"operator", "In"}, {"values", json::array({"node-b"})}};
  const json terms = json::array({{{"matchFields", json::array({field})}}});
  AddPod(
      "pinned", "one-gpu", "",
      {{"affinity",
        {{"nodeAffinity",
          {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}}}});
  EXPECT_EQ(WaitBound("pinned")["spec"]["nodeName"], "node-b");
}

TEST_F(ControlPlaneTest, DeletedPodFreesAndDeletesItsGeneratedClaim) {
  AddNode("node-0");
  AddSlice("node-0", {dra::testing::TestGpu(0)});
  AddTemplate("one-gpu", Request(kGpuClass));
  StartPlane();
  AddPod("gone", "one-gpu");
  WaitBound("gone");
  const std::string claim = ClaimOf("gone");
  ASSERT_TRUE(client_->Delete(kube::kPods, "default", "gone").ok());
  // While the kubelet stops it, the pod keeps its claim.
  json terminating = WaitFor(kube::kPods, "gone", [](const json& p) {
    return p["metadata"].contains("deletionTimestamp");
  });
  // Give the control plane a pass to (wrongly) let go; no pass may come
  // when it has nothing to do.
  plane_->WaitForPasses(plane_->WaitForPasses(-1, std::chrono::milliseconds(0)),
                        std::chrono::seconds(1));
  json held = Get(kube::kResourceClaims, claim);
  EXPECT_EQ(held["status"]["reservedFor"][0]["name"], "gone") << held.dump();
  KubeletRemoves("gone");
  // The garbage collector marks the claim deleted; deallocating removes the
  // finalizer, and then it is gone.
  WaitFor(kube::kResourceClaims, claim, [](const json& c) { return c.is_null(); });
  AddPod("next", "one-gpu");
  WaitBound("next");
  EXPECT_THAT(Devices(Get(kube::kResourceClaims, ClaimOf("next"))),
              ::testing::ElementsAre("gpu-0"));
}

TEST_F(ControlPlaneTest, SharedClaimServesTwoPodsAndIsFreedWithTheLast) {
  AddNode("node-0");
  AddNode("node-1");
  AddSlice("node-0", {dra::testing::TestGpu(0)});
  AddSlice("node-1", {dra::testing::TestGpu(0)});
  AddClaim("shared", Request(kGpuClass));
  StartPlane();
  AddPod("x", "", "shared");
  AddPod("y", "", "shared");
  const std::string node = WaitBound("x")["spec"]["nodeName"];
  EXPECT_EQ(WaitBound("y")["spec"]["nodeName"], node);  // pinned by the allocation
  json claim = Get(kube::kResourceClaims, "shared");
  EXPECT_EQ(claim["status"]["reservedFor"].size(), 2u);
  EXPECT_EQ(Devices(claim).size(), 1u);

  KubeletRemoves("x");
  claim = WaitFor(kube::kResourceClaims, "shared",
                  [](const json& c) { return c["status"]["reservedFor"].size() == 1; });
  EXPECT_EQ(claim["status"]["reservedFor"][0]["name"], "y");
  EXPECT_EQ(Devices(claim).size(), 1u);
  KubeletRemoves("y");
  // Deallocated, and the delete protection gone with the allocation (the
  // named claim itself stays).
  WaitFor(kube::kResourceClaims, "shared", [](const json& c) {
    return c.is_object() && !c.value("/status/allocation"_json_pointer, json()).is_object() &&
           c.value("/metadata/finalizers"_json_pointer, json::array()).empty();
  });
}

TEST_F(ControlPlaneTest, FullGpuAndItsMigInstanceAreNeverBothAllocated) {
  AddNode("node-0");
  AddSlice("node-0", {dra::testing::TestMigGpu(0)});
  AddTemplate("mig", Request(kMigClass));
  AddTemplate("full", Request(kGpuClass));
  StartPlane();
  AddPod("small", "mig");
  WaitBound("small");
  EXPECT_THAT(Devices(Get(kube::kResourceClaims, ClaimOf("small"))),
              ::testing::ElementsAre(::testing::HasSubstr("mig")));
  AddPod("whole", "full");
  EXPECT_THAT(WaitUnschedulable("whole"),
              HasSubstr("gpu-0 shares memory slices with a device already taken"));
  SetPhase("small", "Failed");
  WaitBound("whole");
  EXPECT_THAT(Devices(Get(kube::kResourceClaims, ClaimOf("whole"))),
              ::testing::ElementsAre("gpu-0"));
}

// Pods arriving together, faster than the informers report the
// allocations: each device still goes to one claim only.
TEST_F(ControlPlaneTest, ManyPodsAtOnceNeverShareADevice) {
  AddNode("node-0");
  AddNode("node-1");
  AddSlice("node-0", {dra::testing::TestGpu(0), dra::testing::TestGpu(1)});
  AddSlice("node-1", {dra::testing::TestGpu(0), dra::testing::TestGpu(1)});
  AddTemplate("one-gpu", Request(kGpuClass));
  StartPlane();
  for (int i = 0; i < 7; ++i) AddPod("p" + std::to_string(i), "one-gpu");
  std::set<std::pair<std::string, std::string>> devices;
  int bound = 0, waiting = 0;
  for (int i = 0; i < 7; ++i) {
    const std::string pod = "p" + std::to_string(i);
    json p = WaitFor(kube::kPods, pod, [](const json& p) {
      if (!p.value("/spec/nodeName"_json_pointer, std::string()).empty()) return true;
      for (const json& c : p.value("/status/conditions"_json_pointer, json::array()))
        if (c.value("reason", "") == "Unschedulable") return true;
      return false;
    });
    if (p.value("/spec/nodeName"_json_pointer, std::string()).empty()) {
      ++waiting;
      continue;
    }
    ++bound;
    json claim = Get(kube::kResourceClaims, ClaimOf(pod));
    const json r = claim["status"]["allocation"]["devices"]["results"][0];
    EXPECT_EQ(r["pool"], p["spec"]["nodeName"]);
    EXPECT_TRUE(
        devices.insert({r["pool"].get<std::string>(), r["device"].get<std::string>()}).second)
        << "given twice: " << r.dump();
  }
  EXPECT_EQ(bound, 4);
  EXPECT_EQ(waiting, 3);
}

// A gated pod (spec.schedulingGates) waits, says why, and holds nothing;
// removing its gates schedules it; a gate cannot be added back (ADR 0019:
// k8shazgpu's gangs are released this way).
TEST_F(ControlPlaneTest, GatedPodWaitsHoldingNothingUntilItsGatesAreRemoved) {
  AddNode("node-0");
  AddSlice("node-0", {dra::testing::TestGpu(0)});
  AddTemplate("one-gpu", Request(kGpuClass));
  StartPlane();
  AddPod("rank-0", "one-gpu", "", {{"schedulingGates", {{{"name", "canhazgpu.dev/gang"}}}}});
  json pod = WaitFor(kube::kPods, "rank-0", [](const json& p) {
    for (const json& c : p.value("/status/conditions"_json_pointer, json::array()))
      if (c.value("type", "") == "PodScheduled") return true;
    return false;
  });
  const json condition = pod["status"]["conditions"][0];
  EXPECT_EQ(condition["status"], "False");
  EXPECT_EQ(condition["reason"], "SchedulingGated");
  EXPECT_EQ(condition["message"], "Scheduling is blocked due to non-empty scheduling gates");
  EXPECT_FALSE(pod["spec"].contains("nodeName"));
  // Its claim exists but holds no device, and no FailedScheduling was said.
  EXPECT_FALSE(Get(kube::kResourceClaims, ClaimOf("rank-0"))["status"].contains("allocation"));
  const json events = client_->List(kube::kEvents, "default").value();  // kept: not a temporary
  for (const json& e : events["items"]) EXPECT_NE(e["reason"], "FailedScheduling") << e.dump();

  json fresh = Get(kube::kPods, "rank-0");  // the claim controller wrote its status since
  fresh["spec"].erase("schedulingGates");
  absl::StatusOr<json> ungated = client_->Update(kube::kPods, "default", fresh);
  ASSERT_TRUE(ungated.ok()) << ungated.status();
  EXPECT_EQ(WaitBound("rank-0")["spec"]["nodeName"], "node-0");

  json regated = Get(kube::kPods, "rank-0");
  regated["spec"]["schedulingGates"] = {{{"name", "again"}}};
  absl::StatusOr<json> refused = client_->Update(kube::kPods, "default", regated);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("only deletion is allowed, but found new scheduling gate 'again'"));
}

// The GenericWorkload gate: pods naming a gang PodGroup wait for it and for
// its quorum, then are bound all together or not at all; a gang that does
// not fit holds nothing and does not stand in the way of one that does.
TEST_F(ControlPlaneTest, AGangPodGroupsPodsAreBoundTogetherOrNotAtAll) {
  EnableGenericWorkload();
  for (const char* node : {"node-0", "node-1"}) {
    AddNode(node);
    AddSlice(node, {dra::testing::TestGpu(0)});
  }
  AddTemplate("one-gpu", Request(kGpuClass));
  StartPlane();
  auto member = [](const std::string& group) {
    return json{{"schedulingGroup", {{"podGroupName", group}}}};
  };
  auto add_group = [&](const std::string& name, int min_count) {
    json group = {{"apiVersion", "scheduling.k8s.io/v1beta1"},
                  {"kind", "PodGroup"},
                  {"metadata", {{"name", name}, {"namespace", "default"}}},
                  {"spec", {{"schedulingPolicy", {{"gang", {{"minCount", min_count}}}}}}}};
    ASSERT_TRUE(client_->CreateObject(kube::kPodGroups, "default", group).ok());
  };
  // Three ranks of one GPU each, on two GPUs. Before their PodGroup exists,
  // and before all three exist, they wait without a word.
  AddPod("trio-0", "one-gpu", "", member("trio"));
  AddPod("trio-1", "one-gpu", "", member("trio"));
  add_group("trio", 3);
  const int64_t passes = plane_->WaitForPasses(0, std::chrono::seconds(20));
  plane_->WaitForPasses(passes, std::chrono::seconds(20));
  for (const char* pod : {"trio-0", "trio-1"}) {
    const json p = Get(kube::kPods, pod);
    EXPECT_FALSE(p["spec"].contains("nodeName")) << p.dump();
    for (const json& c : p.value("/status/conditions"_json_pointer, json::array()))
      EXPECT_NE(c.value("type", ""), "PodScheduled") << p.dump();
  }
  // With its quorum it is tried as one, and does not fit: nobody is bound,
  // no claim holds a device.
  AddPod("trio-2", "one-gpu", "", member("trio"));
  const std::string why = WaitUnschedulable("trio-2");
  EXPECT_THAT(why,
              HasSubstr("pod group trio: its 3 pending pods are placed together or not at all"));
  EXPECT_THAT(WaitUnschedulable("trio-0"), HasSubstr("pod group trio"));
  for (const char* pod : {"trio-0", "trio-1", "trio-2"}) {
    EXPECT_FALSE(Get(kube::kPods, pod)["spec"].contains("nodeName"));
    EXPECT_FALSE(Get(kube::kResourceClaims, ClaimOf(pod))["status"].contains("allocation"));
  }
  // A pair that fits is bound at once, beside the waiting trio.
  add_group("pair", 2);
  AddPod("pair-0", "one-gpu", "", member("pair"));
  AddPod("pair-1", "one-gpu", "", member("pair"));
  const std::string first = WaitBound("pair-0")["spec"]["nodeName"];
  const std::string second = WaitBound("pair-1")["spec"]["nodeName"];
  EXPECT_NE(first, second);
  EXPECT_FALSE(Get(kube::kPods, "trio-0")["spec"].contains("nodeName"));
}

TEST_F(ControlPlaneTest, PodsWithoutClaimsSpreadOverReadyNodes) {
  AddNode("node-0");
  AddNode("node-1");
  AddNode("node-2", json::object(), /*ready=*/false);
  StartPlane();
  AddPod("p1", "");
  const std::string first = WaitBound("p1")["spec"]["nodeName"];
  AddPod("p2", "");
  const std::string second = WaitBound("p2")["spec"]["nodeName"];
  EXPECT_NE(first, second);
  EXPECT_NE(first, "node-2");
  EXPECT_NE(second, "node-2");
}

TEST_F(ControlPlaneTest, MissingTemplateIsWhatThePodWaitsFor) {
  AddNode("node-0");
  StartPlane();
  AddPod("early", "not-yet");
  EXPECT_EQ(WaitUnschedulable("early"),
            "0/1 nodes are available: waiting for dynamic resource controller to create the "
            "resourceclaim \"gpu\" (resourceclaimtemplate default/not-yet does not exist).");
  AddSlice("node-0", {dra::testing::TestGpu(0)});
  AddTemplate("not-yet", Request(kGpuClass));
  WaitBound("early");
}

TEST_F(ControlPlaneTest, TemplateAndConfigMapOwnedByADeletedPodAreCollected) {
  AddNode("node-0");
  StartPlane();
  AddPod("run", "");
  const std::string uid = Get(kube::kPods, "run")["metadata"]["uid"];
  AddOwned(kube::kResourceClaimTemplates, Template("run-gpus"), "run", uid);
  AddOwned(kube::kConfigMaps, ConfigMap("run-env"), "run", uid);
  // A pass with the owner alive keeps them.
  plane_->WaitForPasses(plane_->WaitForPasses(-1, std::chrono::milliseconds(0)),
                        std::chrono::seconds(1));
  EXPECT_FALSE(Get(kube::kResourceClaimTemplates, "run-gpus").is_null());
  EXPECT_FALSE(Get(kube::kConfigMaps, "run-env").is_null());
  // The store leaves them (set_collect_background_dependents(false)): what
  // deletes them is the control plane's garbage collector.
  KubeletRemoves("run");
  WaitFor(kube::kResourceClaimTemplates, "run-gpus", [](const json& t) { return t.is_null(); });
  WaitFor(kube::kConfigMaps, "run-env", [](const json& c) { return c.is_null(); });
}

TEST_F(ControlPlaneTest, ObjectsWhoseOwnerNeverExistedOrWasReplacedAreCollected) {
  AddNode("node-0");
  AddPod("alive", "");
  const std::string alive_uid = Get(kube::kPods, "alive")["metadata"]["uid"];
  AddOwned(kube::kConfigMaps, ConfigMap("kept"), "alive", alive_uid);
  AddOwned(kube::kConfigMaps, ConfigMap("orphan"), "never", "5d1c0f2e-0000-4000-8000-000000000001");
  // The owner's name exists, but it is another pod: the owner is gone.
  AddOwned(kube::kResourceClaimTemplates, Template("stale"), "alive",
           "5d1c0f2e-0000-4000-8000-000000000002");
  StartPlane();
  WaitFor(kube::kConfigMaps, "orphan", [](const json& c) { return c.is_null(); });
  WaitFor(kube::kResourceClaimTemplates, "stale", [](const json& t) { return t.is_null(); });
  // Objects created after the plane started are looked at too.
  AddOwned(kube::kConfigMaps, ConfigMap("late-orphan"), "never",
           "5d1c0f2e-0000-4000-8000-000000000003");
  WaitFor(kube::kConfigMaps, "late-orphan", [](const json& c) { return c.is_null(); });
  EXPECT_FALSE(Get(kube::kConfigMaps, "kept").is_null());
  EXPECT_FALSE(Get(kube::kPods, "alive").is_null());
}

}  // namespace
}  // namespace canhazgpu::simcluster
