#include "cacheplan/types.h"

#include "core/strings.h"

namespace canhazgpu::cacheplan {
namespace {

using nlohmann::json;

// Tolerant readers: absent or of another type reads as empty.
std::string Str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}
int64_t Int(const json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}
const json& Obj(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : kNull;
}
std::vector<std::string> Strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.is_object() || !j.contains(key) || !j[key].is_array()) return out;
  for (const json& v : j[key]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}
// Writers: only what is set.
void PutStr(json& j, const char* key, const std::string& value) {
  if (!value.empty()) j[key] = value;
}
void PutInt(json& j, const char* key, int64_t value) {
  if (value != 0) j[key] = value;
}

}  // namespace

absl::StatusOr<CacheItem> ItemFromJson(const json& j) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        StrCat("a cache plan item must be an object, not ", j.dump()));
  }
  CacheItem item;
  item.name = Str(j, "name");
  item.type = Str(j, "type");
  if (const json& image = Obj(j, "image"); image.is_object()) {
    item.image = ImageSource{.ref = Str(image, "ref")};
  }
  if (const json& repo = Obj(j, "gitRepo"); repo.is_object()) {
    item.git_repo = GitRepoSource{
        .url = Str(repo, "url"), .branch = Str(repo, "branch"), .commit = Str(repo, "commit")};
  }
  if (const json& model = Obj(j, "hfModel"); model.is_object()) {
    item.hf_model = HfModelSource{.repo_id = Str(model, "repoId"),
                                  .revision = Str(model, "revision"),
                                  .allow_patterns = Strings(model, "allowPatterns")};
  }
  if (const json& selector = Obj(Obj(j, "scope"), "nodeSelector"); selector.is_object()) {
    for (const auto& [key, value] : selector.items()) {
      if (value.is_string()) item.node_selector[key] = value.get<std::string>();
    }
  }
  if (const json& secret = Obj(j, "pullSecretRef"); secret.is_object()) {
    item.pull_secret =
        SecretRef{.namespace_name = Str(secret, "namespace"), .name = Str(secret, "name")};
  }
  item.refresh_requested_at = Str(j, "refreshRequestedAt");
  return item;
}

json ItemToJson(const CacheItem& item) {
  json j = {{"name", item.name}, {"type", item.type}};
  if (item.image) j["image"] = {{"ref", item.image->ref}};
  if (item.git_repo) {
    json repo = {{"url", item.git_repo->url}};
    PutStr(repo, "branch", item.git_repo->branch);
    PutStr(repo, "commit", item.git_repo->commit);
    j["gitRepo"] = repo;
  }
  if (item.hf_model) {
    json model = {{"repoId", item.hf_model->repo_id}};
    PutStr(model, "revision", item.hf_model->revision);
    if (!item.hf_model->allow_patterns.empty()) {
      model["allowPatterns"] = item.hf_model->allow_patterns;
    }
    j["hfModel"] = model;
  }
  if (!item.node_selector.empty()) j["scope"] = {{"nodeSelector", item.node_selector}};
  if (item.pull_secret) {
    j["pullSecretRef"] = {{"namespace", item.pull_secret->namespace_name},
                          {"name", item.pull_secret->name}};
  }
  PutStr(j, "refreshRequestedAt", item.refresh_requested_at);
  return j;
}

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

PlanStatus PlanStatusFromJson(const json& status) {
  PlanStatus out;
  const json& summary = Obj(status, "summary");
  out.summary = {.items = static_cast<int>(Int(summary, "items")),
                 .nodes = static_cast<int>(Int(summary, "nodes")),
                 .ready = static_cast<int>(Int(summary, "ready")),
                 .pulling = static_cast<int>(Int(summary, "pulling")),
                 .failed = static_cast<int>(Int(summary, "failed")),
                 .pending = static_cast<int>(Int(summary, "pending"))};
  if (status.is_object() && status.contains("conditions") && status["conditions"].is_array()) {
    for (const json& c : status["conditions"]) {
      out.conditions.push_back({.type = Str(c, "type"),
                                .status = Str(c, "status"),
                                .reason = Str(c, "reason"),
                                .message = Str(c, "message"),
                                .last_transition_time = Str(c, "lastTransitionTime")});
    }
  }
  return out;
}

json PlanStatusToJson(const PlanStatus& status) {
  const PlanSummary& s = status.summary;
  json out = {{"summary",
               {{"items", s.items},
                {"nodes", s.nodes},
                {"ready", s.ready},
                {"pulling", s.pulling},
                {"failed", s.failed},
                {"pending", s.pending}}}};
  json conditions = json::array();
  for (const Condition& c : status.conditions) {
    json j = {{"type", c.type}, {"status", c.status}};
    PutStr(j, "reason", c.reason);
    PutStr(j, "message", c.message);
    PutStr(j, "lastTransitionTime", c.last_transition_time);
    conditions.push_back(j);
  }
  out["conditions"] = conditions;
  return out;
}

absl::StatusOr<CachePlan> PlanFromJson(const json& object) {
  if (!object.is_object()) return absl::InvalidArgumentError("a CachePlan must be a JSON object");
  CachePlan plan;
  const json& metadata = Obj(object, "metadata");
  plan.name = Str(metadata, "name");
  plan.resource_version = Str(metadata, "resourceVersion");
  const json& spec = Obj(object, "spec");
  if (spec.is_object() && spec.contains("items")) {
    if (!spec["items"].is_array()) {
      return absl::InvalidArgumentError(
          StrCat("CachePlan ", plan.name, ": spec.items must be a list"));
    }
    for (const json& j : spec["items"]) {
      absl::StatusOr<CacheItem> item = ItemFromJson(j);
      if (!item.ok()) {
        return absl::InvalidArgumentError(
            StrCat("CachePlan ", plan.name, ": ", item.status().message()));
      }
      plan.items.push_back(*std::move(item));
    }
  }
  if (const json& status = Obj(object, "status"); status.is_object()) {
    plan.status = PlanStatusFromJson(status);
  }
  return plan;
}

json PlanToJson(const CachePlan& plan) {
  json object = {{"apiVersion", kApiVersion},
                 {"kind", "CachePlan"},
                 {"metadata", {{"name", plan.name}}},
                 {"spec", {{"items", ItemsToJson(plan.items)}}}};
  if (plan.status) object["status"] = PlanStatusToJson(*plan.status);
  return object;
}

NodeItem NodeItemFromJson(const json& j) {
  return {.plan = Str(j, "plan"),
          .name = Str(j, "name"),
          .type = Str(j, "type"),
          .state = Str(j, "state"),
          .bytes_done = Int(j, "bytesDone"),
          .bytes_total = Int(j, "bytesTotal"),
          .digest = Str(j, "digest"),
          .commit = Str(j, "commit"),
          .revision = Str(j, "revision"),
          .size_bytes = Int(j, "sizeBytes"),
          .message = Str(j, "message"),
          .last_checked = Str(j, "lastChecked"),
          .last_used = Str(j, "lastUsed")};
}

json NodeItemToJson(const NodeItem& item) {
  json j = {{"plan", item.plan}, {"name", item.name}, {"type", item.type}, {"state", item.state}};
  PutInt(j, "bytesDone", item.bytes_done);
  PutInt(j, "bytesTotal", item.bytes_total);
  PutStr(j, "digest", item.digest);
  PutStr(j, "commit", item.commit);
  PutStr(j, "revision", item.revision);
  PutInt(j, "sizeBytes", item.size_bytes);
  PutStr(j, "message", item.message);
  PutStr(j, "lastChecked", item.last_checked);
  PutStr(j, "lastUsed", item.last_used);
  return j;
}

absl::StatusOr<NodeCacheStatus> NodeStatusFromJson(const json& object) {
  if (!object.is_object()) {
    return absl::InvalidArgumentError("a NodeCacheStatus must be a JSON object");
  }
  NodeCacheStatus out;
  const json& status = Obj(object, "status");
  out.node_name = Str(status, "nodeName");
  if (out.node_name.empty()) out.node_name = Str(Obj(object, "metadata"), "name");
  if (status.is_object() && status.contains("items") && status["items"].is_array()) {
    for (const json& j : status["items"]) {
      if (j.is_object()) out.items.push_back(NodeItemFromJson(j));
    }
  }
  const json& disk = Obj(status, "disk");
  out.disk = {.used_bytes = Int(disk, "usedBytes"), .limit_bytes = Int(disk, "limitBytes")};
  out.last_update = Str(status, "lastUpdate");
  return out;
}

json NodeStatusToJson(const NodeCacheStatus& status) {
  json items = json::array();
  for (const NodeItem& item : status.items) items.push_back(NodeItemToJson(item));
  json s = {
      {"nodeName", status.node_name},
      {"items", items},
      {"disk", {{"usedBytes", status.disk.used_bytes}, {"limitBytes", status.disk.limit_bytes}}}};
  PutStr(s, "lastUpdate", status.last_update);
  return {{"apiVersion", kApiVersion},
          {"kind", "NodeCacheStatus"},
          {"metadata", {{"name", status.node_name}}},
          {"spec", json::object()},
          {"status", s}};
}

}  // namespace canhazgpu::cacheplan
