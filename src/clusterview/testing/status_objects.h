// Cluster objects for the status tests and benchmark, shaped as the real
// writers leave them: a node's ResourceSlice (dra::ResourceSliceJson), a
// pod with the canhazgpu.dev/user label, a ResourceClaim allocated and
// reserved for pods, a NodeGpuStatus. Plain JSON (the NodeGpuStatus typed,
// its ToJson() for the client), so a test puts them into a View directly or
// creates them through the client. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/strings.h"
#include "dra/devices.h"
#include "kube/objects_gpu_status.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::clusterview::testing {

inline nlohmann::json NodeObject(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}};
}

// The pool as its one slice, with the devices' taints (which the node
// driver adds when it publishes; dra::DeviceJson leaves them out).
inline nlohmann::json SliceObject(const dra::DevicePool& pool) {
  nlohmann::json slice = nlohmann::json::parse(dra::ResourceSliceJson(pool).dump());
  for (size_t i = 0; i < pool.devices.size(); ++i) {
    for (const dra::DeviceTaint& t : pool.devices[i].taints) {
      nlohmann::json taint = {{"key", t.key}, {"effect", t.effect}};
      if (!t.value.empty()) taint["value"] = t.value;
      slice["spec"]["devices"][i]["taints"].push_back(taint);
    }
  }
  return slice;
}

inline nlohmann::json NamespaceObject(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
}

// `user` becomes the canhazgpu.dev/user label when not empty; `start`
// status.startTime when not empty (set through the status by LoadView tests).
inline nlohmann::json PodObject(const std::string& ns, const std::string& name,
                                const std::string& node, const std::string& user = "",
                                const std::string& start = "") {
  nlohmann::json pod = {{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata", {{"name", name}, {"namespace", ns}}},
                        {"spec",
                         {{"nodeName", node},
                          {"restartPolicy", "Never"},
                          {"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}};
  if (!user.empty()) pod["metadata"]["labels"] = {{"canhazgpu.dev/user", user}};
  if (!start.empty()) pod["status"] = {{"startTime", start}};
  return pod;
}

// Allocated `devices` of `pool` (driver `driver`), reserved for `pods` (in
// the claim's namespace). `created` sets metadata.creationTimestamp.
inline nlohmann::json ClaimObject(const std::string& ns, const std::string& name,
                                  const std::string& pool, const std::vector<std::string>& devices,
                                  const std::vector<std::string>& pods = {},
                                  const std::string& driver = dra::kDriverName,
                                  const std::string& created = "") {
  nlohmann::json claim = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec",
       {{"devices",
         {{"requests",
           {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.canhazgpu.dev"}}}}}}}}}}};
  if (!created.empty()) claim["metadata"]["creationTimestamp"] = created;
  nlohmann::json results = nlohmann::json::array();
  for (const std::string& d : devices) {
    results.push_back({{"request", "gpu"}, {"driver", driver}, {"pool", pool}, {"device", d}});
  }
  claim["status"] = {{"allocation", {{"devices", {{"results", results}}}}}};
  if (!pods.empty()) {
    nlohmann::json reserved = nlohmann::json::array();
    for (const std::string& p : pods) {
      reserved.push_back({{"resource", "pods"}, {"name", p}, {"uid", "uid-" + p}});
    }
    claim["status"]["reservedFor"] = reserved;
  }
  return claim;
}

// A NodeGpuStatus whose status.devices are `devices`, entries as the node
// driver writes them (name, type, state, held, claims, usage, taints), in
// JSON for the tests to read; one the type does not accept aborts the test.
inline kube::NodeGpuStatus NodeGpuStatusObject(const std::string& node,
                                               const nlohmann::json& devices,
                                               const std::string& update_time = "") {
  kube::NodeGpuStatus status;
  status.metadata.name = node;
  status.spec.node_name = node;
  status.status =
      kube::NodeGpuStatusStatus::FromJson(nlohmann::json{{"devices", devices}}, "status").value();
  status.status.update_time = update_time;
  return status;
}

}  // namespace canhazgpu::clusterview::testing
