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
  // A change needs no list when this publisher wrote the slices last: it
  // kept what the server answered. Someone else having changed them shows
  // as a conflict (or a missing slice), and then it reads after all.
  std::optional<json> known;
  if (!verify && written_) known = json(*written_);
  absl::StatusOr<PublishResult> result = Write(devices, std::move(known));
  if (!result.ok() && !verify &&
      (kube::IsApiConflict(result.status()) || kube::IsApiNotFound(result.status()))) {
    result = Write(devices, std::nullopt);
  }
  return result;
}

absl::StatusOr<PublishResult> SlicePublisher::Write(const NodeDevices& devices,
                                                    std::optional<json> known) {
  last_.reset();  // until this call succeeds, the API may hold anything
  written_.reset();
  const std::string& node = devices.pool.pool;
  const std::string& driver = devices.pool.driver;
  json existing;
  if (known) {
    existing = *std::move(known);
  } else {
    ASSIGN_OR_RETURN(existing, ListSlices(node, driver));
  }
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
    written_.emplace();
    for (auto& [name, slice] : by_name) written_->push_back(std::move(slice));
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
  for (const auto& entry : by_name) {
    const std::string& name = entry.first;
    const bool wanted = std::any_of(next.slices.begin(), next.slices.end(),
                                    [&](const json& s) { return NameOf(s) == name; });
    if (wanted) continue;
    absl::Status deleted = client_.Delete(kube::kResourceSlices, "", name);
    if (!deleted.ok() && !kube::IsApiNotFound(deleted)) return deleted;
  }
  std::vector<json> written;
  for (json& slice : next.slices) {
    auto it = by_name.find(NameOf(slice));
    if (it == by_name.end()) {
      absl::StatusOr<json> created = client_.CreateObject(kube::kResourceSlices, "", slice);
      if (created.ok()) {
        written.push_back(*std::move(created));
        continue;
      }
      if (!kube::IsApiAlreadyExists(created.status())) return created.status();
      // Made meanwhile (by our own earlier, interrupted run): update it.
      ASSIGN_OR_RETURN(json current, client_.Get(kube::kResourceSlices, "", NameOf(slice)));
      it = by_name.emplace(NameOf(slice), std::move(current)).first;
    }
    slice["metadata"]["resourceVersion"] = it->second["metadata"]["resourceVersion"];
    ASSIGN_OR_RETURN(json updated, client_.Update(kube::kResourceSlices, "", slice));
    written.push_back(std::move(updated));
  }
  last_ = PublishResult{.changed = true,
                        .generation = generation + 1,
                        .slices = next.slices.size(),
                        .dropped = std::move(next.dropped)};
  // As built (without the resourceVersions the writes added).
  last_slices_ = BuildSlices(devices, generation + 1).slices;
  written_ = std::move(written);
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
