#include "cacheplan/types.h"

#include <utility>

#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::cacheplan {

using nlohmann::json;

CacheItem FromObject(const CacheItemObject& object) {
  CacheItem item;
  item.name = object.name.value_or("");
  item.type = object.type.value_or("");
  if (object.image) item.image = ImageSource{.ref = object.image->ref.value_or("")};
  if (const auto& repo = object.git_repo) {
    item.git_repo = GitRepoSource{
        .url = repo->url.value_or(""), .branch = repo->branch, .commit = repo->commit};
  }
  if (const auto& model = object.hf_model) {
    item.hf_model = HfModelSource{.repo_id = model->repo_id.value_or(""),
                                  .revision = model->revision,
                                  .allow_patterns = model->allow_patterns};
  }
  item.node_selector = object.scope.node_selector;
  if (const auto& secret = object.pull_secret_ref) {
    item.pull_secret = SecretRef{.namespace_name = secret->namespace_name.value_or(""),
                                 .name = secret->name.value_or("")};
  }
  item.refresh_requested_at = object.refresh_requested_at;
  return item;
}

CacheItemObject ToObject(const CacheItem& item) {
  CacheItemObject object;
  object.name = item.name;
  object.type = item.type;
  if (item.image) object.image.emplace().ref = item.image->ref;
  if (item.git_repo) {
    GitRepoObject& repo = object.git_repo.emplace();
    repo.url = item.git_repo->url;
    repo.branch = item.git_repo->branch;
    repo.commit = item.git_repo->commit;
  }
  if (item.hf_model) {
    HfModelObject& model = object.hf_model.emplace();
    model.repo_id = item.hf_model->repo_id;
    model.revision = item.hf_model->revision;
    model.allow_patterns = item.hf_model->allow_patterns;
  }
  object.scope.node_selector = item.node_selector;
  if (item.pull_secret) {
    SecretRefObject& secret = object.pull_secret_ref.emplace();
    secret.namespace_name = item.pull_secret->namespace_name;
    secret.name = item.pull_secret->name;
  }
  object.refresh_requested_at = item.refresh_requested_at;
  return object;
}

absl::StatusOr<CacheItem> ItemFromJson(const json& j) {
  absl::StatusOr<CacheItemObject> object = CacheItemObject::FromJson(j);
  if (!object.ok()) {
    return absl::InvalidArgumentError(StrCat("cache plan item: ", object.status().message()));
  }
  return FromObject(*object);
}

json ItemToJson(const CacheItem& item) { return ToObject(item).ToJson(); }

std::vector<CacheItem> ItemsFromJson(const json& items) {
  std::vector<CacheItem> out;
  if (!items.is_array()) return out;
  for (const json& j : items) {
    absl::StatusOr<CacheItem> item = ItemFromJson(j);
    if (item.ok()) out.push_back(*std::move(item));
  }
  return out;
}

json ItemsToJson(const std::vector<CacheItem>& items) {
  json out = json::array();
  for (const CacheItem& item : items) out.push_back(ItemToJson(item));
  return out;
}

PlanStatus FromObject(const PlanStatusObject& object) {
  const PlanSummaryObject& s = object.summary;
  PlanStatus out;
  out.summary = {.items = static_cast<int>(s.items.value_or(0)),
                 .nodes = static_cast<int>(s.nodes.value_or(0)),
                 .ready = static_cast<int>(s.ready.value_or(0)),
                 .pulling = static_cast<int>(s.pulling.value_or(0)),
                 .failed = static_cast<int>(s.failed.value_or(0)),
                 .pending = static_cast<int>(s.pending.value_or(0))};
  for (const kube::Condition& c : object.conditions.value_or(std::vector<kube::Condition>{})) {
    out.conditions.push_back({.type = c.type,
                              .status = c.status,
                              .reason = c.reason,
                              .message = c.message,
                              .last_transition_time = c.last_transition_time});
  }
  return out;
}

PlanStatusObject ToObject(const PlanStatus& status) {
  PlanStatusObject object;
  PlanSummaryObject& s = object.summary;
  s.items = status.summary.items;
  s.nodes = status.summary.nodes;
  s.ready = status.summary.ready;
  s.pulling = status.summary.pulling;
  s.failed = status.summary.failed;
  s.pending = status.summary.pending;
  std::vector<kube::Condition>& conditions = object.conditions.emplace();
  for (const Condition& c : status.conditions) {
    kube::Condition& out = conditions.emplace_back();
    out.type = c.type;
    out.status = c.status;
    out.reason = c.reason;
    out.message = c.message;
    out.last_transition_time = c.last_transition_time;
  }
  return object;
}

json PlanStatusToJson(const PlanStatus& status) { return ToObject(status).ToJson(); }

CachePlan FromObject(const CachePlanObject& object) {
  CachePlan plan;
  plan.name = object.metadata.name;
  plan.resource_version = object.metadata.resource_version;
  for (const CacheItemObject& item : object.spec.items.value_or(std::vector<CacheItemObject>{})) {
    plan.items.push_back(FromObject(item));
  }
  if (object.status) plan.status = FromObject(*object.status);
  return plan;
}

CachePlanObject ToObject(const CachePlan& plan) {
  CachePlanObject object;
  object.metadata.name = plan.name;
  std::vector<CacheItemObject>& items = object.spec.items.emplace();
  for (const CacheItem& item : plan.items) items.push_back(ToObject(item));
  if (plan.status) object.status = ToObject(*plan.status);
  return object;
}

absl::StatusOr<CachePlan> PlanFromJson(const json& object) {
  absl::StatusOr<CachePlanObject> read = CachePlanObject::FromJson(object);
  if (!read.ok()) {
    const std::string name = kube::StringAt(object, json::json_pointer("/metadata/name"));
    return absl::InvalidArgumentError(
        StrCat("CachePlan", name.empty() ? "" : " ", name, ": ", read.status().message()));
  }
  return FromObject(*read);
}

json PlanToJson(const CachePlan& plan) { return ToObject(plan).ToJson(); }

namespace {

NodeItem FromObject(const NodeItemObject& object) {
  return {.plan = object.plan.value_or(""),
          .name = object.name.value_or(""),
          .type = object.type.value_or(""),
          .state = object.state.value_or(""),
          .bytes_done = object.bytes_done.value_or(0),
          .bytes_total = object.bytes_total.value_or(0),
          .digest = object.digest,
          .commit = object.commit,
          .revision = object.revision,
          .size_bytes = object.size_bytes.value_or(0),
          .message = object.message,
          .last_checked = object.last_checked,
          .last_used = object.last_used};
}

// Byte counts are left out when zero, as the status has always been written.
std::optional<int64_t> UnlessZero(int64_t value) {
  return value != 0 ? std::optional<int64_t>(value) : std::nullopt;
}

NodeItemObject ToObject(const NodeItem& item) {
  NodeItemObject object;
  object.plan = item.plan;
  object.name = item.name;
  object.type = item.type;
  object.state = item.state;
  object.bytes_done = UnlessZero(item.bytes_done);
  object.bytes_total = UnlessZero(item.bytes_total);
  object.digest = item.digest;
  object.commit = item.commit;
  object.revision = item.revision;
  object.size_bytes = UnlessZero(item.size_bytes);
  object.message = item.message;
  object.last_checked = item.last_checked;
  object.last_used = item.last_used;
  return object;
}

}  // namespace

NodeCacheStatus FromObject(const NodeCacheStatusObject& object) {
  const NodeCacheStatusStatusObject& status = object.status;
  NodeCacheStatus out;
  out.node_name = status.node_name.value_or("");
  if (out.node_name.empty()) out.node_name = object.metadata.name;
  for (const NodeItemObject& item : status.items.value_or(std::vector<NodeItemObject>{})) {
    out.items.push_back(FromObject(item));
  }
  out.disk = {.used_bytes = status.disk.used_bytes.value_or(0),
              .limit_bytes = status.disk.limit_bytes.value_or(0)};
  out.last_update = status.last_update;
  return out;
}

NodeCacheStatusObject ToObject(const NodeCacheStatus& status) {
  NodeCacheStatusObject object;
  object.metadata.name = status.node_name;
  object.status.node_name = status.node_name;
  std::vector<NodeItemObject>& items = object.status.items.emplace();
  for (const NodeItem& item : status.items) items.push_back(ToObject(item));
  object.status.disk.used_bytes = status.disk.used_bytes;
  object.status.disk.limit_bytes = status.disk.limit_bytes;
  object.status.last_update = status.last_update;
  return object;
}

absl::StatusOr<NodeCacheStatus> NodeStatusFromJson(const json& object) {
  absl::StatusOr<NodeCacheStatusObject> read = NodeCacheStatusObject::FromJson(object);
  if (!read.ok()) {
    return absl::InvalidArgumentError(StrCat("NodeCacheStatus: ", read.status().message()));
  }
  return FromObject(*read);
}

json NodeStatusToJson(const NodeCacheStatus& status) { return ToObject(status).ToJson(); }

}  // namespace canhazgpu::cacheplan
