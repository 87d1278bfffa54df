// The CachePlan and NodeCacheStatus objects as the API server holds them:
// typed objects on kube's JsonObject base (kube/json_object.h), one struct
// per JSON object of deploy/crds/cacheplans.yaml and nodecachestatuses.yaml.
// They are the wire layer under the values of types.h: types.cc converts
// between the two, and code that writes a whole object (metadata, status)
// edits one of these instead of its JSON. Like every typed object they keep
// the fields they do not model, and a wrongly typed field fails the read
// with one line naming it ("spec.items[1].gitRepo.url: expected a string,
// got number"). A field declared std::optional is written whenever it is
// set, even when empty or zero. Plain values; not thread-safe to mutate
// from two threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kube/json_object.h"
#include "kube/objects_meta.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cacheplan {

inline constexpr char kApiVersion[] = "canhazgpu.dev/v1alpha1";

struct ImageObject : kube::JsonObject<ImageObject> {
  std::optional<std::string> ref;
};

struct GitRepoObject : kube::JsonObject<GitRepoObject> {
  std::optional<std::string> url;
  std::string branch;
  std::string commit;
};

struct HfModelObject : kube::JsonObject<HfModelObject> {
  std::optional<std::string> repo_id;  // "repoId"
  std::string revision;
  std::vector<std::string> allow_patterns;
};

struct SecretRefObject : kube::JsonObject<SecretRefObject> {
  std::optional<std::string> namespace_name;  // "namespace"
  std::optional<std::string> name;
};

struct ItemScopeObject : kube::JsonObject<ItemScopeObject> {
  std::map<std::string, std::string> node_selector;
};

// One of spec.items.
struct CacheItemObject : kube::JsonObject<CacheItemObject> {
  std::optional<std::string> name;
  std::optional<std::string> type;
  std::optional<ImageObject> image;
  std::optional<GitRepoObject> git_repo;
  std::optional<HfModelObject> hf_model;
  ItemScopeObject scope;
  std::optional<SecretRefObject> pull_secret_ref;
  std::string refresh_requested_at;
};

struct CachePlanSpecObject : kube::JsonObject<CachePlanSpecObject> {
  std::optional<std::vector<CacheItemObject>> items;  // written even when empty
};

// The writer sets every count, zeros included.
struct PlanSummaryObject : kube::JsonObject<PlanSummaryObject> {
  std::optional<int64_t> items;
  std::optional<int64_t> nodes;
  std::optional<int64_t> ready;
  std::optional<int64_t> pulling;
  std::optional<int64_t> failed;
  std::optional<int64_t> pending;
};

struct PlanStatusObject : kube::JsonObject<PlanStatusObject> {
  PlanSummaryObject summary;
  std::optional<std::vector<kube::Condition>> conditions;  // written even when empty
};

struct CachePlanObject : kube::JsonObject<CachePlanObject> {
  std::string api_version = kApiVersion;
  std::string kind = "CachePlan";
  kube::ObjectMeta metadata;
  CachePlanSpecObject spec;
  std::optional<PlanStatusObject> status;
};

// One of a NodeCacheStatus's status.items. The writer leaves the byte
// counts out when they are zero.
struct NodeItemObject : kube::JsonObject<NodeItemObject> {
  std::optional<std::string> plan;
  std::optional<std::string> name;
  std::optional<std::string> type;
  std::optional<std::string> state;
  std::optional<int64_t> bytes_done;
  std::optional<int64_t> bytes_total;
  std::string digest;
  std::string commit;
  std::string revision;
  std::optional<int64_t> size_bytes;
  std::string message;
  std::string last_checked;
  std::string last_used;
};

// The writer sets both, zeros included.
struct DiskUsageObject : kube::JsonObject<DiskUsageObject> {
  std::optional<int64_t> used_bytes;
  std::optional<int64_t> limit_bytes;
};

// The status of a NodeCacheStatus (named as a generated Go type would be).
struct NodeCacheStatusStatusObject : kube::JsonObject<NodeCacheStatusStatusObject> {
  std::optional<std::string> node_name;
  std::optional<std::vector<NodeItemObject>> items;  // written even when empty
  DiskUsageObject disk;
  std::string last_update;
};

struct NodeCacheStatusObject : kube::JsonObject<NodeCacheStatusObject> {
  std::string api_version = kApiVersion;
  std::string kind = "NodeCacheStatus";
  kube::ObjectMeta metadata;                       // named after the node
  nlohmann::json spec = nlohmann::json::object();  // the CRD has no spec fields
  NodeCacheStatusStatusObject status;
};

}  // namespace canhazgpu::cacheplan

namespace canhazgpu::kube {

extern template struct JsonObject<cacheplan::ImageObject>;
extern template struct JsonObject<cacheplan::GitRepoObject>;
extern template struct JsonObject<cacheplan::HfModelObject>;
extern template struct JsonObject<cacheplan::SecretRefObject>;
extern template struct JsonObject<cacheplan::ItemScopeObject>;
extern template struct JsonObject<cacheplan::CacheItemObject>;
extern template struct JsonObject<cacheplan::CachePlanSpecObject>;
extern template struct JsonObject<cacheplan::PlanSummaryObject>;
extern template struct JsonObject<cacheplan::PlanStatusObject>;
extern template struct JsonObject<cacheplan::CachePlanObject>;
extern template struct JsonObject<cacheplan::NodeItemObject>;
extern template struct JsonObject<cacheplan::DiskUsageObject>;
extern template struct JsonObject<cacheplan::NodeCacheStatusStatusObject>;
extern template struct JsonObject<cacheplan::NodeCacheStatusObject>;

}  // namespace canhazgpu::kube
