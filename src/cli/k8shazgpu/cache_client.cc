#include "cli/k8shazgpu/cache_client.h"

#include "cacheplan/validate.h"
#include "cli/k8shazgpu/cache_edit.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {

using cacheplan::CacheItem;
using nlohmann::json;

namespace {

// Conflicts retried before giving up: each one means another writer won a
// race, so a handful is plenty.
constexpr int kEditAttempts = 8;

}  // namespace

absl::StatusOr<std::optional<json>> ReadPlan(Context& ctx, const std::string& name) {
  absl::StatusOr<json> object = ctx.client->Get(cacheplan::kCachePlans, "", name);
  if (kube::IsApiNotFound(object.status())) return std::nullopt;
  if (!object.ok()) return Explain(object.status(), ctx);
  return *object;
}

absl::Status EditPlan(Context& ctx, const std::string& plan_name,
                      const std::function<absl::Status(std::vector<CacheItem>&)>& edit) {
  absl::Status last;
  for (int attempt = 0; attempt < kEditAttempts; ++attempt) {
    ASSIGN_OR_RETURN(std::optional<json> read, ReadPlan(ctx, plan_name));
    json object = read ? *read : cacheplan::PlanToJson(cacheplan::CachePlan{.name = plan_name});
    ASSIGN_OR_RETURN(cacheplan::CachePlan plan, cacheplan::PlanFromJson(object));
    RETURN_IF_ERROR(edit(plan.items));
    // The nodes decide whether they take local repositories (`vllm run` in a
    // simulated cluster adds its file:// upstream); `cache add` refuses them
    // itself, so that a person hears it at once.
    RETURN_IF_ERROR(cacheplan::Validate(plan, {.allow_local_git = true}));
    json& spec = object["spec"];
    if (!spec.is_object()) spec = json::object();
    spec["items"] = MergeItemsJson(spec.value("items", json::array()), plan.items);
    absl::StatusOr<json> written =
        read ? ctx.client->Update(cacheplan::kCachePlans, "", object)
             : ctx.client->CreateObject(cacheplan::kCachePlans, "", object);
    if (written.ok()) return absl::OkStatus();
    if (!kube::IsApiConflict(written.status()) && !kube::IsApiAlreadyExists(written.status())) {
      return Explain(written.status(), ctx);
    }
    last = written.status();
  }
  return absl::AbortedError(StrCat("cache plan ", plan_name, " kept changing under this edit (",
                                   kEditAttempts, " conflicts); try again: ", last.message()));
}

absl::StatusOr<std::vector<cacheplan::NodeCacheStatus>> ListNodeCacheStatuses(Context& ctx) {
  absl::StatusOr<json> listed = ctx.client->ListAll(cacheplan::kNodeCacheStatuses, "");
  if (!listed.ok()) return Explain(listed.status(), ctx);
  std::vector<cacheplan::NodeCacheStatus> nodes;
  for (const json& o : (*listed)["items"]) {
    absl::StatusOr<cacheplan::NodeCacheStatus> node = cacheplan::NodeStatusFromJson(o);
    if (node.ok()) nodes.push_back(*std::move(node));
  }
  return nodes;
}

std::map<std::string, cacheplan::Labels> NodeLabels(Context& ctx) {
  std::map<std::string, cacheplan::Labels> out;
  absl::StatusOr<json> nodes = ctx.client->ListAll(kube::kNodes, "");
  if (!nodes.ok()) return out;
  for (const json& node : (*nodes)["items"]) {
    cacheplan::Labels& labels = out[node["metadata"].value("name", "")];
    // Kept in a variable: a range-for over a temporary's items dangles.
    const json node_labels = node["metadata"].value("labels", json::object());
    for (const auto& [k, v] : node_labels.items()) {
      if (v.is_string()) labels[k] = v.get<std::string>();
    }
  }
  return out;
}

}  // namespace canhazgpu::cli::k8s
