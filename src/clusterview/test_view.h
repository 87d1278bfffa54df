// Views for the clusterview tests and benchmark, built in memory the way a
// reader of the API would see them: Ready nodes, the driver's pools, our two
// DeviceClasses (deploy/deviceclasses.yaml), claims allocated by the
// scheduler (allocation results, nodeSelector, reservedFor) and pods.
// Not thread-safe (a View is a plain value).
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "clusterview/view.h"
#include "core/clock.h"
#include "core/strings.h"
#include "dra/devices.h"
#include "dra/test_pools.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::clusterview::testing {

// A time written as RFC 3339 ("2026-11-24T11:00:00Z").
inline TimePoint At(const char* rfc3339) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) << err;
  return std::chrono::time_point_cast<TimePoint::duration>(absl::ToChronoTime(t));
}

using nlohmann::json;

// A NodeGpuStatus written as JSON, typed for View::node_gpu_statuses; one
// the type does not accept aborts the test.
inline kube::NodeGpuStatus GpuStatusOf(const json& object) {
  return kube::NodeGpuStatus::FromJson(object).value();
}

inline constexpr char kGpuClass[] = "gpu.canhazgpu.dev";
inline constexpr char kMigClass[] = "mig.canhazgpu.dev";

inline void AddClasses(View& view) {
  for (const char* type : {"gpu", "mig"}) {
    const std::string name = StrCat(type, ".canhazgpu.dev");
    view.classes[name] = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "DeviceClass"},
        {"metadata", {{"name", name}}},
        {"spec",
         {{"selectors",
           {{{"cel",
              {{"expression", StrCat("device.driver == \"gpu.canhazgpu.dev\" && "
                                     "device.attributes[\"gpu.canhazgpu.dev\"].type == \"",
                                     type, "\"")}}}}}}}}};
  }
}

// A Ready node publishing `pool` (named after the node).
inline void AddNode(View& view, const std::string& name, dra::DevicePool pool) {
  view.nodes[name] = {{"apiVersion", "v1"},
                      {"kind", "Node"},
                      {"metadata", {{"name", name}}},
                      {"status", {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  view.pools.pools.push_back({name, std::move(pool)});
}

inline void AddGpuNode(View& view, const std::string& name, int gpus) {
  std::vector<GpuInfo> infos;
  for (int i = 0; i < gpus; ++i) infos.push_back(dra::testing::TestGpu(i));
  AddNode(view, name, dra::BuildDevicePool(infos, name));
}

// One `exactly` request.
inline json Request(const std::string& name, const std::string& cls, int64_t count = 1,
                    const std::vector<std::string>& selectors = {}) {
  json exactly = {{"deviceClassName", cls}, {"count", count}};
  for (const std::string& s : selectors)
    exactly["selectors"].push_back({{"cel", {{"expression", s}}}});
  return {{"name", name}, {"exactly", exactly}};
}

// The requests and constraints are vectors, not a json: `{Request(...)}` as
// a json is a one-element array with GCC and a copy of the request with
// clang (CWG 2137).
inline json Claim(const std::string& ns, const std::string& name, std::vector<json> requests,
                  std::vector<json> constraints = {}) {
  json devices = {{"requests", requests}};
  if (!constraints.empty()) devices["constraints"] = constraints;
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"namespace", ns}, {"name", name}, {"uid", StrCat("uid-claim-", name)}}},
          {"spec", {{"devices", devices}}}};
}

// The claim as the scheduler leaves it: `devices` of `node` for its first
// request, reserved for `pod` (none when empty).
inline json Allocate(json claim, const std::string& node, const std::vector<std::string>& devices,
                     const std::string& pod = "") {
  const std::string request = claim["spec"]["devices"]["requests"][0]["name"];
  json results = json::array();
  for (const std::string& d : devices) {
    results.push_back(
        {{"request", request}, {"driver", "gpu.canhazgpu.dev"}, {"pool", node}, {"device", d}});
  }
  claim["status"]["allocation"] = {
      {"devices", {{"results", results}}},
      {"nodeSelector",
       {{"nodeSelectorTerms",
         {{{"matchFields",
            {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}}}}}}}}}};
  if (!pod.empty()) {
    claim["status"]["reservedFor"] = {
        {{"resource", "pods"}, {"name", pod}, {"uid", StrCat("uid-pod-", pod)}}};
  }
  return claim;
}

inline json Pod(const std::string& ns, const std::string& name, const std::string& claim,
                const std::string& user = "", const std::string& created = "2026-11-24T10:00:00Z") {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"namespace", ns},
                {"name", name},
                {"uid", StrCat("uid-pod-", name)},
                {"creationTimestamp", created}}},
              {"spec",
               {{"containers", {{{"name", "main"}, {"image", "busybox"}}}},
                {"resourceClaims", {{{"name", "gpu"}, {"resourceClaimName", claim}}}}}},
              {"status", {{"phase", "Pending"}}}};
  if (!user.empty()) pod["metadata"]["labels"]["canhazgpu.dev/user"] = user;
  return pod;
}

inline void Put(View& view, const json& object) {
  const std::string kind = object["kind"];
  if (kind == "Pod") view.pods[KeyOf(object)] = object;
  if (kind == "ResourceClaim") view.claims[KeyOf(object)] = object;
}

// A pod of `user` running with an allocated claim of `devices` on `node`.
inline void AddRunning(View& view, const std::string& name, const std::string& node,
                       const std::vector<std::string>& devices, const std::string& user) {
  json claim = Allocate(Claim("team", StrCat(name, "-gpu"), {Request("gpu", kGpuClass, 1)}), node,
                        devices, name);
  json pod = Pod("team", name, StrCat(name, "-gpu"), user);
  pod["spec"]["nodeName"] = node;
  pod["status"]["phase"] = "Running";
  Put(view, claim);
  Put(view, pod);
}

}  // namespace canhazgpu::clusterview::testing
