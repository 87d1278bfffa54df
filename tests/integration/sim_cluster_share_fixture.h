// The fixture of the simulated cluster's tests of GPUs shared by memory
// (sim_cluster_share_test.cc, sim_cluster_share_status_test.cc): one node
// running k8shazgpu-node --gpu-sharing=memory, and pods whose claims ask
// for capacity.requests.memory.
#pragma once

#include <string>

#include "integration/sim_cluster_fixture.h"

namespace canhazgpu::testing {

// One node with one 80 GB GPU (81559 MiB; 81047 MiB to share).
class SimClusterShareTest : public SimClusterTest {
 protected:
  using json = nlohmann::json;
  void SetUp() override {
    StartCluster({"--gpu-sharing", "memory"}, "nodes:\n- model: H100-80GB\n  gpus: 1\n");
  }
  // A claim template asking for `memory` of one GPU ("" for the whole GPU)
  // and a pod using it that runs `script`.
  void CreateSharePod(const std::string& name, const std::string& memory,
                      const std::string& script) {
    json exactly = {{"deviceClassName", "gpu.canhazgpu.dev"}, {"count", 1}};
    if (!memory.empty()) exactly["capacity"] = {{"requests", {{"memory", memory}}}};
    const json template_object = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "ResourceClaimTemplate"},
        {"metadata", {{"name", name + "-gpus"}}},
        {"spec",
         {{"spec", {{"devices", {{"requests", {{{"name", "gpus"}, {"exactly", exactly}}}}}}}}}}};
    ASSERT_TRUE(client_->CreateObject(kTemplates, "default", template_object).ok());
    const json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"labels", {{"canhazgpu.dev/user", "alice"}}}}},
        {"spec",
         {{"restartPolicy", "Never"},
          {"resourceClaims", {{{"name", "gpus"}, {"resourceClaimTemplateName", name + "-gpus"}}}},
          {"containers",
           {{{"name", "main"},
             {"image", "ubuntu"},
             {"command", {"sh", "-c", script}},
             {"resources", {{"claims", {{{"name", "gpus"}}}}}}}}}}}};
    absl::StatusOr<json> created = client_->CreateObject(kube::kPods, "default", pod);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  std::string EnvScript(const std::string& name) {
    return "echo MEM=$CANHAZGPU_GPU_MEM TOTAL=$CANHAZGPU_GPU_MEM_TOTAL "
           "ISOLATION=$CANHAZGPU_MEMORY_ISOLATION; " +
           WaitForGate(name);
  }
  // The pod's allocated shareID; "" when it has none (yet).
  std::string ShareIdOf(const std::string& pod) {
    const json p = Pod(pod);
    if (!p["status"].contains("resourceClaimStatuses")) return "";
    const std::string claim = p["status"]["resourceClaimStatuses"][0]["resourceClaimName"];
    const json c = client_->Get(kube::kResourceClaims, "default", claim).value_or(json::object());
    const json results = c.value("status", json::object())
                             .value("allocation", json::object())
                             .value("devices", json::object())
                             .value("results", json::array());
    return results.empty() ? "" : results[0].value("shareID", "");
  }
  // Why the scheduler left the pod Pending; "" while it has not said.
  std::string Unschedulable(const std::string& name) {
    for (const json& c : Pod(name)["status"].value("conditions", json::array())) {
      if (c["type"] == "PodScheduled" && c["status"] == "False") return c.value("message", "");
    }
    return "";
  }
  // The published memory of gpu-0 on node-0.
  std::string PublishedMemory() {
    absl::StatusOr<json> slices = client_->ListAll(kube::kResourceSlices, "");
    if (!slices.ok()) return "";
    for (const json& s : (*slices)["items"]) {
      for (const json& d : s["spec"].value("devices", json::array())) {
        if (d["name"] == "gpu-0") return d["capacity"]["memory"]["value"];
      }
    }
    return "";
  }
};

}  // namespace canhazgpu::testing
