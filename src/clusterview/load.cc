#include "clusterview/load.h"

#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "core/strings.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;

// Every object of `ref` in every namespace. The client's errors say "cannot
// list RESOURCE: ..."; any that does not gets that prefix here.
absl::StatusOr<std::vector<json>> ListItems(kube::Client& client, const kube::ResourceRef& ref) {
  absl::StatusOr<json> list = client.ListAll(ref, "");
  if (!list.ok()) {
    const std::string prefix = StrCat("cannot list ", ref.Qualified());
    if (!kube::ReasonOf(list.status()).empty() ||
        absl::StartsWith(list.status().message(), prefix)) {
      return list.status();
    }
    return absl::Status(list.status().code(),
                        StrCat("cannot list ", ref.Qualified(), ": ", list.status().message()));
  }
  std::vector<json> items;
  if (json* found = &(*list)["items"]; found->is_array()) {
    items.reserve(found->size());
    for (json& item : *found) items.push_back(std::move(item));
  }
  return items;
}

}  // namespace

absl::StatusOr<View> LoadView(kube::Client& client) {
  View view;
  struct Target {
    const kube::ResourceRef* ref;
    std::map<std::string, json>* into;
  };
  for (const Target& t : {Target{&kube::kNodes, &view.nodes}, Target{&kube::kPods, &view.pods},
                          Target{&kube::kResourceClaims, &view.claims},
                          Target{&kube::kResourceClaimTemplates, &view.templates},
                          Target{&kube::kDeviceClasses, &view.classes}}) {
    absl::StatusOr<std::vector<json>> items = ListItems(client, *t.ref);
    if (!items.ok()) return items.status();
    *t.into = ByKey(*items);
  }
  absl::StatusOr<std::vector<json>> slices = ListItems(client, kube::kResourceSlices);
  if (!slices.ok()) return slices.status();
  view.pools = PoolsFromJson(*slices);

  absl::StatusOr<std::vector<json>> statuses = ListItems(client, kube::kNodeGpuStatuses);
  if (!statuses.ok() && !kube::IsApiNotFound(statuses.status())) return statuses.status();
  if (statuses.ok()) {
    for (const json& object : *statuses) {
      absl::StatusOr<kube::NodeGpuStatus> status = kube::NodeGpuStatus::FromJson(object);
      if (!status.ok()) {
        // Only a server that skips the CRD's schema holds one; its node is
        // shown from its slices alone.
        view.pools.problems.push_back(
            StrCat("NodeGpuStatus ", KeyOf(object), " not read: ", status.status().message()));
        continue;
      }
      // Named after its node; spec.nodeName says so explicitly.
      const std::string node = status->NodeName();
      view.node_gpu_statuses[node] = *std::move(status);
    }
  }
  return view;
}

}  // namespace canhazgpu::clusterview
