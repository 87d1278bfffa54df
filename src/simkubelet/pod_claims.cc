#include "simkubelet/pod_claims.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "core/status_macros.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::simkubelet {
namespace {

using nlohmann::json;

// The claim's name for spec.resourceClaims[] entry `pod_claim`; "" when the
// pod needs no claim for it (its template produced none).
absl::StatusOr<std::string> ClaimName(const json& pod, const json& pod_claim) {
  const std::string name = pod_claim.value("name", "");
  if (pod_claim.value("resourceClaimName", json()).is_string()) {
    return pod_claim["resourceClaimName"].get<std::string>();
  }
  for (const json& s : pod.value("/status/resourceClaimStatuses"_json_pointer, json::array())) {
    if (s.value("name", "") != name) continue;
    const json generated = s.value("resourceClaimName", json());
    return generated.is_string() ? generated.get<std::string>() : "";
  }
  return absl::UnavailableError(StrCat("claim ", name, ": ResourceClaim not created yet"));
}

bool ReservedFor(const json& claim, const std::string& pod_uid) {
  for (const json& r : claim.value("/status/reservedFor"_json_pointer, json::array())) {
    if (r.value("resource", "") == "pods" && r.value("uid", "") == pod_uid) return true;
  }
  return false;
}

// As the kubelet matches them (cdiDevicesAsList): a container naming no
// request gets every device, one naming a request the devices whose
// request names hold it exactly (a driver reports "gpu", not "gpu/small").
bool ServesRequest(const driver::PreparedDevice& device, const std::string& request) {
  if (request.empty() || device.request_names.empty()) return true;
  return std::find(device.request_names.begin(), device.request_names.end(), request) !=
         device.request_names.end();
}

// Calls `use(claim name, request, device)` for every prepared device the
// container's resources.claims give it (a claim, or one of its requests).
void ForEachDeviceOfContainer(
    const json& container, const std::vector<PreparedClaim>& prepared,
    const std::function<void(const std::string&, const std::string&, const ClaimDevice&)>& use) {
  for (const json& used : container.value("/resources/claims"_json_pointer, json::array())) {
    const std::string name = used.value("name", "");
    const std::string request = used.value("request", "");
    for (const PreparedClaim& claim : prepared) {
      if (claim.pod_claim_name != name) continue;
      for (const ClaimDevice& d : claim.devices) {
        if (ServesRequest(d.device, request)) use(name, request, d);
      }
    }
  }
}

absl::Status PrepareFailure(const std::string& message) {
  return absl::FailedPreconditionError(StrCat("prepare dynamic resources: ", message));
}

// A claim of the pod, read and checked, and the drivers of its devices.
struct WantedClaim {
  std::string pod_claim_name;
  driver::ClaimRef ref;
  std::set<std::string> drivers;
};

// The pod's claims, each allocated and reserved for the pod.
absl::StatusOr<std::vector<WantedClaim>> ReadWantedClaims(kube::Client& client, const json& pod) {
  const std::string ns = kube::StringAt(pod, "/metadata/namespace"_json_pointer);
  const std::string pod_name = kube::StringAt(pod, "/metadata/name"_json_pointer);
  const std::string pod_uid = kube::StringAt(pod, "/metadata/uid"_json_pointer);
  std::vector<WantedClaim> wanted;
  for (const json& pod_claim : pod.value("/spec/resourceClaims"_json_pointer, json::array())) {
    absl::StatusOr<std::string> name = ClaimName(pod, pod_claim);
    if (!name.ok()) return PrepareFailure(std::string(name.status().message()));
    if (name->empty()) continue;
    absl::StatusOr<json> claim = client.Get(kube::kResourceClaims, ns, *name);
    if (!claim.ok()) {
      return PrepareFailure(StrCat("fetch ResourceClaim ", *name, ": ", claim.status().message()));
    }
    const std::string claim_uid = kube::StringAt(*claim, "/metadata/uid"_json_pointer);
    if (!claim->contains("status") || !(*claim)["status"].contains("allocation")) {
      return PrepareFailure(StrCat("ResourceClaim ", *name, " (", claim_uid, ") is not allocated"));
    }
    if (!ReservedFor(*claim, pod_uid)) {
      return PrepareFailure(StrCat("pod ", pod_name, " (", pod_uid,
                                   ") is not allowed to use ResourceClaim ", *name, " (", claim_uid,
                                   ")"));
    }
    WantedClaim w{pod_claim.value("name", ""), {ns, claim_uid, *name}, {}};
    for (const json& r :
         claim->value("/status/allocation/devices/results"_json_pointer, json::array())) {
      if (r.value("driver", json()).is_string()) w.drivers.insert(r["driver"].get<std::string>());
    }
    wanted.push_back(std::move(w));
  }
  return wanted;
}

}  // namespace

std::vector<std::string> CdiIdsForContainer(const json& container,
                                            const std::vector<PreparedClaim>& prepared) {
  std::vector<std::string> ids;
  ForEachDeviceOfContainer(container, prepared,
                           [&](const std::string&, const std::string&, const ClaimDevice& d) {
                             for (const std::string& id : d.device.cdi_device_ids) {
                               if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
                                 ids.push_back(id);
                               }
                             }
                           });
  return ids;
}

json AllocatedResourcesStatus(const json& container, const std::vector<PreparedClaim>& prepared,
                              const DeviceHealthCache& health) {
  // By status name, in the order first seen.
  std::vector<std::pair<std::string, json>> statuses;
  ForEachDeviceOfContainer(
      container, prepared,
      [&](const std::string& name, const std::string& request, const ClaimDevice& d) {
        std::string served = request;
        if (served.empty() && !d.device.request_names.empty()) {
          served = d.device.request_names[0];
        }
        const std::string status_name =
            served.empty() ? StrCat("claim:", name) : StrCat("claim:", name, "/", served);
        auto it = std::find_if(statuses.begin(), statuses.end(),
                               [&](const auto& s) { return s.first == status_name; });
        if (it == statuses.end()) {
          statuses.emplace_back(status_name, json::array());
          it = std::prev(statuses.end());
        }
        it->second.push_back(
            {{"resourceID", StrCat(d.driver, "/", d.device.pool, "/", d.device.device)},
             {"health", health.Health(d.driver, d.device.pool, d.device.device)}});
      });
  json out = json::array();
  for (auto& [status_name, resources] : statuses) {
    out.push_back({{"name", status_name}, {"resources", std::move(resources)}});
  }
  return out;
}

DraManager::DraManager(kube::Client& client, const PluginWatcher& plugins)
    : client_(client), plugins_(plugins) {}

absl::StatusOr<std::vector<PreparedClaim>> DraManager::PrepareResources(const json& pod) {
  const std::string pod_uid = kube::StringAt(pod, "/metadata/uid"_json_pointer);
  // Read and check every claim before preparing any.
  ASSIGN_OR_RETURN(const std::vector<WantedClaim> wanted, ReadWantedClaims(client_, pod));

  MutexLock lock(mu_);
  for (const WantedClaim& w : wanted) {
    ClaimInfo& info = claims_[w.ref.uid];
    info.ref = w.ref;
    info.drivers = w.drivers;
    info.pod_uids.insert(pod_uid);
    pod_claims_[pod_uid].insert(w.ref.uid);
  }
  // Per driver, the claims not prepared yet (for another pod on the node).
  std::map<std::string, std::vector<driver::ClaimRef>> batches;
  for (const WantedClaim& w : wanted) {
    if (claims_[w.ref.uid].prepared) continue;
    for (const std::string& d : w.drivers) batches[d].push_back(w.ref);
  }
  std::map<std::string, std::vector<ClaimDevice>> devices;  // by claim uid
  for (const auto& [driver_name, refs] : batches) {
    std::shared_ptr<kubeletplugin::KubeletClient> plugin = plugins_.Get(driver_name);
    if (plugin == nullptr)
      return PrepareFailure(StrCat("DRA driver ", driver_name, " is not registered"));
    absl::StatusOr<std::map<std::string, driver::PrepareResult>> results =
        plugin->NodePrepareResources(refs);
    if (!results.ok())
      return PrepareFailure(StrCat("NodePrepareResources: ", results.status().message()));
    for (const driver::ClaimRef& ref : refs) {
      auto it = results->find(ref.uid);
      if (it == results->end()) {
        return PrepareFailure(StrCat("NodePrepareResources left out ResourceClaim ", ref.name));
      }
      if (!it->second.error.empty()) {
        return PrepareFailure(StrCat("NodePrepareResources failed for ResourceClaim ", ref.name,
                                     ": ", it->second.error));
      }
      for (const driver::PreparedDevice& d : it->second.devices) {
        devices[ref.uid].push_back({driver_name, d});
      }
    }
  }
  for (auto& [uid, prepared] : devices) {
    ClaimInfo& info = claims_[uid];
    info.devices = std::move(prepared);
    info.prepared = true;
  }
  std::vector<PreparedClaim> out;
  for (const WantedClaim& w : wanted) {
    ClaimInfo& info = claims_[w.ref.uid];
    info.prepared = true;  // a claim of no driver has nothing to prepare
    out.push_back(PreparedClaim{w.pod_claim_name, w.ref, info.devices});
  }
  return out;
}

absl::Status DraManager::UnprepareResources(const std::string& pod_uid) {
  MutexLock lock(mu_);
  auto pod = pod_claims_.find(pod_uid);
  if (pod == pod_claims_.end()) return absl::OkStatus();
  std::map<std::string, std::vector<driver::ClaimRef>> batches;
  std::set<std::string> last_users;  // claims this pod is the last to use
  for (const std::string& uid : pod->second) {
    ClaimInfo& info = claims_[uid];
    if (info.pod_uids.size() > 1 || !info.pod_uids.contains(pod_uid)) continue;
    last_users.insert(uid);
    // Also a claim whose prepare failed: the driver may have done part of
    // it, and unprepare is idempotent (as the kubelet does).
    for (const std::string& d : info.drivers) batches[d].push_back(info.ref);
  }
  std::set<std::string> failed;
  std::string first_error;
  for (const auto& [driver_name, refs] : batches) {
    auto note = [&](const std::string& uid, const std::string& message) {
      failed.insert(uid);
      if (first_error.empty()) first_error = message;
    };
    std::shared_ptr<kubeletplugin::KubeletClient> plugin = plugins_.Get(driver_name);
    if (plugin == nullptr) {
      for (const driver::ClaimRef& ref : refs) {
        note(ref.uid, StrCat("DRA driver ", driver_name, " is not registered"));
      }
      continue;
    }
    absl::StatusOr<std::map<std::string, std::string>> results =
        plugin->NodeUnprepareResources(refs);
    for (const driver::ClaimRef& ref : refs) {
      if (!results.ok()) {
        note(ref.uid, StrCat("NodeUnprepareResources: ", results.status().message()));
        continue;
      }
      auto it = results->find(ref.uid);
      if (it == results->end()) {
        note(ref.uid, StrCat("NodeUnprepareResources left out ResourceClaim ", ref.name));
      } else if (!it->second.empty()) {
        note(ref.uid, StrCat("NodeUnprepareResources failed for ResourceClaim ", ref.name, ": ",
                             it->second));
      }
    }
  }
  std::set<std::string> left;
  for (const std::string& uid : pod->second) {
    if (failed.contains(uid)) {
      left.insert(uid);
      continue;
    }
    if (last_users.contains(uid)) {
      claims_.erase(uid);
    } else {
      claims_[uid].pod_uids.erase(pod_uid);
    }
  }
  if (left.empty()) {
    pod_claims_.erase(pod);
    return absl::OkStatus();
  }
  pod->second = std::move(left);
  return absl::FailedPreconditionError(StrCat("unprepare dynamic resources: ", first_error));
}

}  // namespace canhazgpu::simkubelet
