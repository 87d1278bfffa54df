#include "cacheplan/objects.h"

#include "kube/json_object_impl.h"

// The JSON name of each modeled field, as deploy/crds/cacheplans.yaml and
// nodecachestatuses.yaml spell them. The lists sit in cacheplan's namespace
// so that the base finds them by argument-dependent lookup.

namespace canhazgpu::cacheplan {

using kube::Member;
using kube::Tag;

static constexpr auto Fields(Tag<ImageObject>) {
  return std::tuple{Member("ref", &ImageObject::ref)};
}

static constexpr auto Fields(Tag<GitRepoObject>) {
  using T = GitRepoObject;
  return std::tuple{Member("url", &T::url), Member("branch", &T::branch),
                    Member("commit", &T::commit)};
}

static constexpr auto Fields(Tag<HfModelObject>) {
  using T = HfModelObject;
  return std::tuple{Member("repoId", &T::repo_id), Member("revision", &T::revision),
                    Member("allowPatterns", &T::allow_patterns)};
}

static constexpr auto Fields(Tag<SecretRefObject>) {
  using T = SecretRefObject;
  return std::tuple{Member("namespace", &T::namespace_name), Member("name", &T::name)};
}

static constexpr auto Fields(Tag<ItemScopeObject>) {
  return std::tuple{Member("nodeSelector", &ItemScopeObject::node_selector)};
}

static constexpr auto Fields(Tag<CacheItemObject>) {
  using T = CacheItemObject;
  return std::tuple{Member("name", &T::name),
                    Member("type", &T::type),
                    Member("image", &T::image),
                    Member("gitRepo", &T::git_repo),
                    Member("hfModel", &T::hf_model),
                    Member("scope", &T::scope),
                    Member("pullSecretRef", &T::pull_secret_ref),
                    Member("refreshRequestedAt", &T::refresh_requested_at)};
}

static constexpr auto Fields(Tag<CachePlanSpecObject>) {
  return std::tuple{Member("items", &CachePlanSpecObject::items)};
}

static constexpr auto Fields(Tag<PlanSummaryObject>) {
  using T = PlanSummaryObject;
  return std::tuple{Member("items", &T::items),   Member("nodes", &T::nodes),
                    Member("ready", &T::ready),   Member("pulling", &T::pulling),
                    Member("failed", &T::failed), Member("pending", &T::pending)};
}

static constexpr auto Fields(Tag<PlanStatusObject>) {
  return std::tuple{Member("summary", &PlanStatusObject::summary),
                    Member("conditions", &PlanStatusObject::conditions)};
}

static constexpr auto Fields(Tag<CachePlanObject>) {
  using T = CachePlanObject;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata), Member("spec", &T::spec),
                    Member("status", &T::status)};
}

static constexpr auto Fields(Tag<NodeItemObject>) {
  using T = NodeItemObject;
  return std::tuple{Member("plan", &T::plan),
                    Member("name", &T::name),
                    Member("type", &T::type),
                    Member("state", &T::state),
                    Member("bytesDone", &T::bytes_done),
                    Member("bytesTotal", &T::bytes_total),
                    Member("digest", &T::digest),
                    Member("commit", &T::commit),
                    Member("revision", &T::revision),
                    Member("sizeBytes", &T::size_bytes),
                    Member("message", &T::message),
                    Member("lastChecked", &T::last_checked),
                    Member("lastUsed", &T::last_used)};
}

static constexpr auto Fields(Tag<DiskUsageObject>) {
  return std::tuple{Member("usedBytes", &DiskUsageObject::used_bytes),
                    Member("limitBytes", &DiskUsageObject::limit_bytes)};
}

static constexpr auto Fields(Tag<NodeCacheStatusStatusObject>) {
  using T = NodeCacheStatusStatusObject;
  return std::tuple{Member("nodeName", &T::node_name), Member("items", &T::items),
                    Member("disk", &T::disk), Member("lastUpdate", &T::last_update)};
}

static constexpr auto Fields(Tag<NodeCacheStatusObject>) {
  using T = NodeCacheStatusObject;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata), Member("spec", &T::spec),
                    Member("status", &T::status)};
}

}  // namespace canhazgpu::cacheplan

namespace canhazgpu::kube {

template struct JsonObject<cacheplan::ImageObject>;
template struct JsonObject<cacheplan::GitRepoObject>;
template struct JsonObject<cacheplan::HfModelObject>;
template struct JsonObject<cacheplan::SecretRefObject>;
template struct JsonObject<cacheplan::ItemScopeObject>;
template struct JsonObject<cacheplan::CacheItemObject>;
template struct JsonObject<cacheplan::CachePlanSpecObject>;
template struct JsonObject<cacheplan::PlanSummaryObject>;
template struct JsonObject<cacheplan::PlanStatusObject>;
template struct JsonObject<cacheplan::CachePlanObject>;
template struct JsonObject<cacheplan::NodeItemObject>;
template struct JsonObject<cacheplan::DiskUsageObject>;
template struct JsonObject<cacheplan::NodeCacheStatusStatusObject>;
template struct JsonObject<cacheplan::NodeCacheStatusObject>;

}  // namespace canhazgpu::kube
