#include "driver/slice_publisher.h"

#include <algorithm>
#include <map>

#include "core/status_macros.h"
#include "core/strings.h"
#include "kube/resource_rules.h"

namespace canhazgpu::driver {
namespace {

using nlohmann::json;

std::string NameOf(const json& object) { return object["metadata"].value("name", ""); }

// What must match for a slice to need no write: its spec and owners.
bool SameContent(const json& a, const json& b) {
  return a["spec"] == b["spec"] && a["metadata"].value("ownerReferences", json()) ==
                                       b["metadata"].value("ownerReferences", json());
}

}  // namespace

absl::StatusOr<json> SlicePublisher::ListSlices(const std::string& node,
                                                const std::string& driver) {
  ASSIGN_OR_RETURN(
      json list,
      client_.ListAll(kube::kResourceSlices, "",
                      {.field_selector = StrCat("spec.nodeName=", node, ",spec.driver=", driver)}));
  return list["items"];
}

absl::StatusOr<PublishResult> SlicePublisher::Publish(const NodeDevices& devices, bool verify) {
  if (!verify && last_ && BuildSlices(devices, last_->generation).slices == last_slices_) {
    PublishResult same = *last_;
    same.changed = false;
    return same;
  }
  last_.reset();  // until this call succeeds, the API may hold anything
  const std::string& node = devices.pool.pool;
  const std::string& driver = devices.pool.driver;
  ASSIGN_OR_RETURN(json existing, ListSlices(node, driver));
  std::map<std::string, json> by_name;
  int64_t generation = 0;
  for (json& slice : existing) {
    generation = std::max<int64_t>(generation,
                                   slice.value("/spec/pool/generation"_json_pointer, int64_t{0}));
    by_name.emplace(NameOf(slice), std::move(slice));
  }

  BuiltSlices same = BuildSlices(devices, generation);
  PublishResult result{
      .generation = generation, .slices = same.slices.size(), .dropped = same.dropped};
  const bool unchanged =
      generation > 0 && same.slices.size() == by_name.size() &&
      std::all_of(same.slices.begin(), same.slices.end(), [&](const json& slice) {
        auto it = by_name.find(NameOf(slice));
        return it != by_name.end() && SameContent(it->second, slice);
      });
  if (unchanged) {
    last_ = result;
    last_slices_ = std::move(same.slices);
    return result;
  }

  BuiltSlices next = BuildSlices(devices, generation + 1);
  for (const json& slice : next.slices) {
    const std::vector<kube::StatusCause> causes = kube::CheckResourceSliceSpec(slice["spec"]);
    if (!causes.empty()) {  // a bug in BuildSlices: the devices were checked one by one
      return absl::InternalError(StrCat("resourceslice ", NameOf(slice), ": ", causes.front().field,
                                        ": ", causes.front().message));
    }
  }
  for (const auto& [name, slice] : by_name) {
    const bool wanted = std::any_of(next.slices.begin(), next.slices.end(),
                                    [&](const json& s) { return NameOf(s) == name; });
    if (wanted) continue;
    absl::Status deleted = client_.Delete(kube::kResourceSlices, "", name);
    if (!deleted.ok() && !kube::IsApiNotFound(deleted)) return deleted;
  }
  for (json& slice : next.slices) {
    auto it = by_name.find(NameOf(slice));
    if (it == by_name.end()) {
      absl::StatusOr<json> created = client_.CreateObject(kube::kResourceSlices, "", slice);
      if (created.ok()) continue;
      if (!kube::IsApiAlreadyExists(created.status())) return created.status();
      // Made meanwhile (by our own earlier, interrupted run): update it.
      ASSIGN_OR_RETURN(json current, client_.Get(kube::kResourceSlices, "", NameOf(slice)));
      it = by_name.emplace(NameOf(slice), std::move(current)).first;
    }
    slice["metadata"]["resourceVersion"] = it->second["metadata"]["resourceVersion"];
    RETURN_IF_ERROR(client_.Update(kube::kResourceSlices, "", slice).status());
  }
  last_ = PublishResult{.changed = true,
                        .generation = generation + 1,
                        .slices = next.slices.size(),
                        .dropped = std::move(next.dropped)};
  // As built (without the resourceVersions the writes added).
  last_slices_ = BuildSlices(devices, generation + 1).slices;
  return *last_;
}

absl::Status SlicePublisher::Unpublish(const std::string& node, const std::string& driver) {
  ASSIGN_OR_RETURN(json existing, ListSlices(node, driver));
  for (const json& slice : existing) {
    absl::Status deleted = client_.Delete(kube::kResourceSlices, "", NameOf(slice));
    if (!deleted.ok() && !kube::IsApiNotFound(deleted)) return deleted;
  }
  return absl::OkStatus();
}

}  // namespace canhazgpu::driver
