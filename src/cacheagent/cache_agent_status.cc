// The cache agent's reports: its NodeCacheStatus, and the status of the
// CachePlans it works on (summed over every node's report).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cacheagent/cache_agent.h"
#include "cacheplan/summary.h"
#include "core/duration.h"
#include "core/strings.h"

namespace canhazgpu::cacheagent {
namespace {

constexpr const char* kStates[] = {cacheplan::kPending, cacheplan::kPulling, cacheplan::kReady,
                                   cacheplan::kFailed};

// metadata.resourceVersion of an object the API server returned.
std::string ResourceVersionOf(const nlohmann::json& object) {
  return kube::StringAt(object, nlohmann::json::json_pointer("/metadata/resourceVersion"));
}

// The NodeCacheStatus to create: `object` without a version, labelled with
// the node's hostname and, when the Node's uid is known, owned by the Node
// so that deleting the Node deletes its report.
cacheplan::NodeCacheStatusObject NewStatusObject(cacheplan::NodeCacheStatusObject object,
                                                 const std::string& node_uid) {
  const std::string& node = object.metadata.name;
  object.metadata.resource_version.clear();
  object.metadata.labels["kubernetes.io/hostname"] = node;
  if (!node_uid.empty()) {
    kube::OwnerReference& owner = object.metadata.owner_references.emplace_back();
    owner.api_version = "v1";
    owner.kind = "Node";
    owner.name = node;
    owner.uid = node_uid;
  }
  return object;
}

}  // namespace

absl::Status CacheAgent::WriteStatus() {
  cacheplan::NodeCacheStatus status;
  std::string uid;
  {
    MutexLock lock(mu_);
    status = ReportLocked();
    // Taken with the snapshot: a state change after it marks both again.
    dirty_ = false;
    plans_pending_ = plans_pending_ || plans_dirty_;
    plans_dirty_ = false;
    uid = node_uid_;
    std::map<std::string, int> counts;
    for (const auto& [key, entry] : entries_) ++counts[entry.report.state];
    for (const char* state : kStates) items_by_state_.Set(counts[state], {state});
    disk_used_.Set(static_cast<double>(status.disk.used_bytes));
  }
  if (written_ && *written_ == status) return absl::OkStatus();
  cacheplan::NodeCacheStatus stamped = status;
  stamped.last_update = FormatTimestampSeconds(clock_.Now());
  cacheplan::NodeCacheStatusObject object = cacheplan::ToObject(stamped);
  // The version of the last write is the one to write over; a Get only
  // when there is none (start, or someone else wrote in between).
  absl::StatusOr<nlohmann::json> current = absl::NotFoundError("");
  if (!written_version_.empty()) {
    object.metadata.resource_version = written_version_;
    current = client_.UpdateStatus(cacheplan::kNodeCacheStatuses, "", object.ToJson());
  }
  if (!current.ok()) {
    current = client_.Get(cacheplan::kNodeCacheStatuses, "", options_.node_name);
    if (!current.ok() && kube::IsApiNotFound(current.status())) {
      current = client_.CreateObject(cacheplan::kNodeCacheStatuses, "",
                                     NewStatusObject(object, uid).ToJson());
    }
    if (current.ok()) {
      object.metadata.resource_version = ResourceVersionOf(*current);
      current = client_.UpdateStatus(cacheplan::kNodeCacheStatuses, "", object.ToJson());
    }
  }
  if (!current.ok()) {
    written_version_.clear();
    MutexLock lock(mu_);
    dirty_ = true;  // the next flush tries again
    return current.status();
  }
  written_version_ = ResourceVersionOf(*current);
  written_ = status;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<cacheplan::NodeCacheStatus>> CacheAgent::ReadReports() {
  absl::StatusOr<nlohmann::json> reports = client_.ListAll(cacheplan::kNodeCacheStatuses, "");
  if (!reports.ok()) return reports.status();
  std::vector<cacheplan::NodeCacheStatus> statuses;
  for (const nlohmann::json& r : (*reports)["items"]) {
    if (auto s = cacheplan::NodeStatusFromJson(r); s.ok()) statuses.push_back(*std::move(s));
  }
  return statuses;
}

absl::Status CacheAgent::WritePlanStatuses() {
  if (!plans_pending_) return absl::OkStatus();
  std::set<std::string> plans;
  {
    MutexLock lock(mu_);
    for (const auto& [key, entry] : entries_) plans.insert(key.first);
  }
  absl::Status result;
  auto fail = [&](absl::Status s) {
    MutexLock lock(mu_);
    dirty_ = true;  // come back after the status interval
    return s;
  };
  absl::StatusOr<nlohmann::json> nodes = client_.ListAll(kube::kNodes, "");
  if (!nodes.ok()) return fail(nodes.status());
  std::map<std::string, cacheplan::Labels> labels;
  for (const nlohmann::json& n : (*nodes)["items"]) {
    labels[kube::StringAt(n, nlohmann::json::json_pointer("/metadata/name"))] = LabelsOf(n);
  }
  for (const std::string& name : plans) {
    // The plan is read before the reports, so a write over another node's
    // newer sum is refused (the version moved) instead of taking it back:
    // that node wrote its report before it read the plan. A conflict means
    // another node wrote first: read both again and recompute.
    for (int attempt = 0; attempt < 3; ++attempt) {
      absl::StatusOr<nlohmann::json> read = client_.Get(cacheplan::kCachePlans, "", name);
      if (!read.ok()) {
        if (!kube::IsApiNotFound(read.status())) result = read.status();
        break;
      }
      absl::StatusOr<cacheplan::CachePlanObject> object =
          cacheplan::CachePlanObject::FromJson(*read);
      if (!object.ok()) break;
      const cacheplan::CachePlan plan = cacheplan::FromObject(*object);
      absl::StatusOr<std::vector<cacheplan::NodeCacheStatus>> statuses = ReadReports();
      if (!statuses.ok()) {
        result = statuses.status();
        break;
      }
      cacheplan::PlanStatus status = cacheplan::Summarize(plan, *statuses, labels, clock_.Now());
      if (plan.status && *plan.status == status) break;
      object->status = cacheplan::ToObject(status);
      absl::StatusOr<nlohmann::json> written =
          client_.UpdateStatus(cacheplan::kCachePlans, "", object->ToJson());
      if (written.ok()) break;
      if (!kube::IsApiConflict(written.status()) || attempt == 2) {
        result = written.status();
        break;
      }
    }
  }
  if (!result.ok()) return fail(result);
  plans_pending_ = false;
  return absl::OkStatus();
}

}  // namespace canhazgpu::cacheagent
