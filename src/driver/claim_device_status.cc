#include "driver/claim_device_status.h"

#include <set>
#include <tuple>
#include <utility>

#include "core/strings.h"
#include "dra/devices.h"
#include "driver/shared_gpus.h"
#include "kube/json_object.h"

namespace canhazgpu::driver {
namespace {

using nlohmann::json;

constexpr char kReadyCondition[] = "Ready";
constexpr char kPreparedReason[] = "Prepared";

const dra::Device* DeviceNamed(const dra::DevicePool& pool, const std::string& name) {
  for (const dra::Device& d : pool.devices) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

// One entry, without its condition's time.
json StatusEntryOf(const CheckpointDevice& d, const NodeDevices& node, const std::string& driver) {
  json data = json::object();
  const dra::Device* device = DeviceNamed(node.pool, d.device);
  if (device != nullptr) data["uuid"] = device->StringAttribute("uuid");
  std::string message = StrCat(d.device, " prepared on node ", d.pool);
  if (!d.share_id.empty()) {
    const std::string isolation = PodShareIsolationName(d.isolation);
    data["memory"] = dra::FormatQuantity(static_cast<int64_t>(d.memory));
    data["shareableMemory"] = dra::FormatQuantity(static_cast<int64_t>(d.shareable));
    data["memoryIsolation"] = isolation;
    message = StrCat("share of ", dra::FormatQuantity(static_cast<int64_t>(d.memory)), " of ",
                     d.device, " prepared on node ", d.pool, "; memory isolation: ", isolation);
  }
  json entry = {{"driver", driver},
                {"pool", d.pool},
                {"device", d.device},
                {"conditions",
                 {{{"type", kReadyCondition},
                   {"status", "True"},
                   {"reason", kPreparedReason},
                   {"message", message}}}},
                {"data", data}};
  if (!d.share_id.empty()) entry["shareID"] = d.share_id;
  return entry;
}

using EntryKey = std::tuple<std::string, std::string, std::string, std::string>;

EntryKey KeyOf(const json& entry) {
  return {kube::StringField(entry, "driver"), kube::StringField(entry, "pool"),
          kube::StringField(entry, "device"), kube::StringField(entry, "shareID")};
}

// The lastTransitionTime of `existing`'s condition `type` when it has the
// same status as `condition`; "" otherwise.
std::string KeptTransitionTime(const json& existing, const json& condition) {
  if (!existing.is_object() || !existing.contains("conditions")) return "";
  const json& conditions = existing["conditions"];
  if (!conditions.is_array()) return "";
  for (const json& c : conditions) {
    if (kube::StringField(c, "type") == kube::StringField(condition, "type") &&
        kube::StringField(c, "status") == kube::StringField(condition, "status")) {
      return kube::StringField(c, "lastTransitionTime");
    }
  }
  return "";
}

// The (driver, pool, device, shareID) keys of the claim's allocation.
std::set<EntryKey> AllocatedKeys(const json& claim) {
  std::set<EntryKey> keys;
  const json::json_pointer at("/status/allocation/devices/results");
  if (!claim.is_object() || !claim.contains(at) || !claim.at(at).is_array()) return keys;
  for (const json& r : claim.at(at)) keys.insert(KeyOf(r));
  return keys;
}

}  // namespace

json DeviceStatusEntries(const CheckpointClaim& claim, const NodeDevices& node,
                         const std::string& driver) {
  json entries = json::array();
  std::set<std::pair<std::string, std::string>> seen;  // device, share
  for (const CheckpointDevice& d : claim.devices) {
    if (!seen.emplace(d.device, d.share_id).second) continue;  // admin access twice
    entries.push_back(StatusEntryOf(d, node, driver));
  }
  return entries;
}

std::map<std::string, DesiredClaimStatus> DesiredClaimStatuses(
    const std::map<std::string, CheckpointClaim>& claims, const NodeDevices& node,
    const std::string& driver) {
  std::map<std::string, DesiredClaimStatus> out;
  for (const auto& [uid, claim] : claims) {
    if (claim.state != PrepareState::kCompleted) continue;
    out[uid] = {.namespace_name = claim.namespace_name,
                .name = claim.name,
                .entries = DeviceStatusEntries(claim, node, driver)};
  }
  return out;
}

json MergeDeviceStatuses(const json& current, const json& ours, const std::string& driver,
                         const std::string& pool, const std::string& now) {
  json merged = json::array();
  std::map<EntryKey, const json*> previous;
  if (current.is_array()) {
    for (const json& entry : current) {
      if (kube::StringField(entry, "driver") == driver &&
          kube::StringField(entry, "pool") == pool) {
        previous[KeyOf(entry)] = &entry;
        continue;
      }
      merged.push_back(entry);
    }
  }
  for (json entry : ours) {
    auto before = previous.find(KeyOf(entry));
    for (json& condition : entry["conditions"]) {
      std::string kept =
          before == previous.end() ? "" : KeptTransitionTime(*before->second, condition);
      condition["lastTransitionTime"] = kept.empty() ? now : kept;
    }
    merged.push_back(std::move(entry));
  }
  return merged;
}

absl::Status WriteClaimDeviceStatus(kube::Client& client, const std::string& ns,
                                    const std::string& name, const std::string& uid,
                                    const json& ours, const std::string& driver,
                                    const std::string& pool, const std::string& now) {
  absl::Status last;
  for (int attempt = 0; attempt < 5; ++attempt) {
    absl::StatusOr<json> claim = client.Get(kube::kResourceClaims, ns, name);
    if (!claim.ok()) {
      return kube::IsApiNotFound(claim.status()) ? absl::OkStatus() : claim.status();
    }
    if (kube::StringAt(*claim, json::json_pointer("/metadata/uid")) != uid) {
      return absl::OkStatus();  // another claim of that name now
    }
    const std::set<EntryKey> allocated = AllocatedKeys(*claim);
    json wanted = json::array();
    for (const json& entry : ours) {
      if (allocated.contains(KeyOf(entry))) wanted.push_back(entry);
    }
    const json::json_pointer at("/status/devices");
    const json current =
        claim->contains(at) && claim->at(at).is_array() ? claim->at(at) : json::array();
    json merged = MergeDeviceStatuses(current, wanted, driver, pool, now);
    if (merged == current) return absl::OkStatus();
    json& status = (*claim)["status"];
    if (!status.is_object()) status = json::object();
    if (merged.empty()) {
      status.erase("devices");
    } else {
      status["devices"] = std::move(merged);
    }
    absl::StatusOr<json> written = client.UpdateStatus(kube::kResourceClaims, ns, *claim);
    if (written.ok() || kube::IsApiNotFound(written.status())) return absl::OkStatus();
    if (!kube::IsApiConflict(written.status())) return written.status();
    last = written.status();
  }
  return last;
}

}  // namespace canhazgpu::driver
