// The cluster as one pass of a reader sees it - the simulated control plane
// (from its informers) or the cluster CLI (from one list of each kind):
// pods, claims, templates, nodes and device classes by key, NodeGpuStatuses
// (typed) by node, with the slices already turned into the allocator's pools. A View is a
// plain value used by one thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "clusterview/slice_pools.h"
#include "dra/allocator.h"
#include "kube/objects_gpu_status.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::clusterview {

// "ns/name", or "name" for a cluster-scoped object.
std::string KeyOf(const nlohmann::json& object);

// The object's metadata.resourceVersion as a number (the simulated server
// counts them; a real one promises no order), 0 if none.
int64_t VersionOf(const nlohmann::json& object);

struct View {
  std::map<std::string, nlohmann::json> pods;                    // by "ns/name"
  std::map<std::string, nlohmann::json> claims;                  // by "ns/name"
  std::map<std::string, nlohmann::json> templates;               // by "ns/name"
  std::map<std::string, nlohmann::json> nodes;                   // by name
  std::map<std::string, nlohmann::json> classes;                 // by name, as read
  std::map<std::string, kube::NodeGpuStatus> node_gpu_statuses;  // by node name
  SlicePools pools;
};

// How a user read from a pod's canhazgpu.dev/user label is shown wherever
// it stands for who holds something: "bob (from label)". The pod's author
// writes that label; nothing checks it, so it is shown as a claim, not as an
// identity. "" stays "".
std::string LabelledUser(const std::string& user);

// The note a run's author gave (k8shazgpu --note), shown beside what it
// holds or waits for; "" when the object has none.
inline constexpr char kNoteAnnotation[] = "canhazgpu.dev/note";
std::string NoteOf(const nlohmann::json& object);

// Objects of a list by key.
std::map<std::string, nlohmann::json> ByKey(const std::vector<nlohmann::json>& objects);

// Turns the informers' slices into pools; unreadable slices become problems.
SlicePools PoolsFromJson(const std::vector<nlohmann::json>& slices);

}  // namespace canhazgpu::clusterview
