// The CachePlan and NodeCacheStatus custom resources (canhazgpu.dev/
// v1alpha1, deploy/crds/cacheplans.yaml and nodecachestatuses.yaml) as
// C++ values, and their JSON. The JSON is read and written through the
// typed objects of objects.h: reading keeps fields we do not model (a newer
// writer's) and fails, with one line naming the field, on a field of the
// wrong type; Validate (validate.h) then checks the rules of the values.
// Writing emits the fields set, plus the few the CRDs have always been
// given even when empty, so what is sent fits the CRD's schema under
// fieldValidation=Strict. Times are RFC 3339 strings as the API stores
// them. Pure values and functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cacheplan/objects.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cacheplan {

inline const kube::ResourceRef kCachePlans{"canhazgpu.dev", "v1alpha1", "cacheplans", false};
inline const kube::ResourceRef kNodeCacheStatuses{"canhazgpu.dev", "v1alpha1", "nodecachestatuses",
                                                  false};
// The plan the developer CLI edits unless told otherwise.
inline constexpr char kDefaultPlan[] = "default";

// Item types, as spec.items[].type spells them.
inline constexpr char kImage[] = "image";
inline constexpr char kGitRepo[] = "gitRepo";
inline constexpr char kHfModel[] = "hfModel";

// Item states on a node, as NodeCacheStatus spells them.
inline constexpr char kPending[] = "Pending";
inline constexpr char kPulling[] = "Pulling";
inline constexpr char kReady[] = "Ready";
inline constexpr char kFailed[] = "Failed";

using Labels = std::map<std::string, std::string>;

struct ImageSource {
  std::string ref;
  bool operator==(const ImageSource&) const = default;
};

struct GitRepoSource {
  std::string url;
  std::string branch;  // at most one of branch and commit
  std::string commit;
  bool operator==(const GitRepoSource&) const = default;
};

struct HfModelSource {
  std::string repo_id;
  std::string revision;  // "" reads as the CRD's default, main
  std::vector<std::string> allow_patterns;
  bool operator==(const HfModelSource&) const = default;
};

struct SecretRef {
  std::string namespace_name;
  std::string name;
  bool operator==(const SecretRef&) const = default;
};

struct CacheItem {
  std::string name;
  std::string type;  // kImage, kGitRepo or kHfModel; anything else fails Validate
  std::optional<ImageSource> image;
  std::optional<GitRepoSource> git_repo;
  std::optional<HfModelSource> hf_model;
  // spec.items[].scope.nodeSelector; empty: every node.
  Labels node_selector;
  std::optional<SecretRef> pull_secret;
  std::string refresh_requested_at;  // RFC 3339, or ""
  bool operator==(const CacheItem&) const = default;
};

struct PlanSummary {
  int items = 0;
  int nodes = 0;
  int ready = 0;
  int pulling = 0;
  int failed = 0;
  int pending = 0;
  bool operator==(const PlanSummary&) const = default;
};

// metav1.Condition, as far as the plan uses it.
struct Condition {
  std::string type;    // "Ready", "Degraded"
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::string last_transition_time;
  bool operator==(const Condition&) const = default;
};

struct PlanStatus {
  PlanSummary summary;
  std::vector<Condition> conditions;
  bool operator==(const PlanStatus&) const = default;
};

struct CachePlan {
  std::string name;
  std::string resource_version;  // read only; not written by ToJson
  std::vector<CacheItem> items;
  std::optional<PlanStatus> status;
  bool operator==(const CachePlan&) const = default;
};

// One item of one plan on one node.
struct NodeItem {
  std::string plan;
  std::string name;
  std::string type;
  std::string state;  // kPending, kPulling, kReady or kFailed
  int64_t bytes_done = 0;
  int64_t bytes_total = 0;
  std::string digest;    // image
  std::string commit;    // gitRepo, hfModel
  std::string revision;  // hfModel
  int64_t size_bytes = 0;
  std::string message;
  std::string last_checked;
  std::string last_used;
  bool operator==(const NodeItem&) const = default;
};

struct DiskUsage {
  int64_t used_bytes = 0;
  int64_t limit_bytes = 0;  // 0: no ceiling
  bool operator==(const DiskUsage&) const = default;
};

struct NodeCacheStatus {
  std::string node_name;
  std::vector<NodeItem> items;
  DiskUsage disk;
  std::string last_update;
  bool operator==(const NodeCacheStatus&) const = default;
};

// The values as typed objects and back. A value made from an object keeps
// none of its unknown fields: edit the object to keep them.
CacheItem FromObject(const CacheItemObject& object);
CacheItemObject ToObject(const CacheItem& item);
PlanStatus FromObject(const PlanStatusObject& object);
// Every summary count, zeros included, and the conditions, [] included.
PlanStatusObject ToObject(const PlanStatus& status);
CachePlan FromObject(const CachePlanObject& object);
// metadata.name, spec.items ([] included) and, when set, status.
CachePlanObject ToObject(const CachePlan& plan);
// The node name falls back to metadata.name when status.nodeName is missing.
NodeCacheStatus FromObject(const NodeCacheStatusObject& object);
// Named after the node; spec {}, status.items ([] included), both disk
// values; an item's byte counts are left out when zero.
NodeCacheStatusObject ToObject(const NodeCacheStatus& status);

// spec.items[] entries. ItemFromJson fails, naming the field, on a value of
// the wrong type; ItemsFromJson leaves out the entries that fail.
absl::StatusOr<CacheItem> ItemFromJson(const nlohmann::json& j);
nlohmann::json ItemToJson(const CacheItem& item);
std::vector<CacheItem> ItemsFromJson(const nlohmann::json& items);
nlohmann::json ItemsToJson(const std::vector<CacheItem>& items);

nlohmann::json PlanStatusToJson(const PlanStatus& status);

// A whole CachePlan object; ToObject's JSON.
absl::StatusOr<CachePlan> PlanFromJson(const nlohmann::json& object);
nlohmann::json PlanToJson(const CachePlan& plan);

// A whole NodeCacheStatus object; ToObject's JSON.
absl::StatusOr<NodeCacheStatus> NodeStatusFromJson(const nlohmann::json& object);
nlohmann::json NodeStatusToJson(const NodeCacheStatus& status);

}  // namespace canhazgpu::cacheplan
