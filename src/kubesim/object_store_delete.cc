// ObjectStore: deleting objects, the pod's graceful deletion, and the
// garbage collection the API server itself does for ownerReferences
// (foreground and orphan propagation; background when asked to).
#include <algorithm>

#include "core/duration.h"
#include "core/strings.h"
#include "kubesim/object_metadata.h"
#include "kubesim/object_store.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;
using object_metadata::HasFinalizers;
using object_metadata::Meta;
using object_metadata::MetaOf;
using object_metadata::Text;

// Whether `object` names `owner_uid` among its ownerReferences.
bool OwnedBy(const json& object, const std::string& owner_uid) {
  const json& meta = MetaOf(object);
  auto refs = meta.find("ownerReferences");
  if (refs == meta.end() || !refs->is_array()) return false;
  for (const json& ref : *refs) {
    if (ref.is_object() && Text(ref, "uid") == owner_uid) return true;
  }
  return false;
}

// The conflict when `options` hold a uid or resource version that `meta`
// does not.
std::optional<kube::ApiStatus> FailedDeletePrecondition(const ResourceType& type,
                                                        const std::string& name, const json& meta,
                                                        const DeleteOptions& options) {
  if (!options.precondition_uid.empty() && options.precondition_uid != Text(meta, "uid")) {
    return kube::ConflictStatus(
        type.group, type.resource, name,
        StrCat("Precondition failed: UID in precondition: ", options.precondition_uid,
               ", UID in object meta: ", Text(meta, "uid")));
  }
  if (!options.precondition_resource_version.empty() &&
      options.precondition_resource_version != Text(meta, "resourceVersion")) {
    return kube::ConflictStatus(
        type.group, type.resource, name,
        StrCat("Precondition failed: ResourceVersion in precondition: ",
               options.precondition_resource_version,
               ", ResourceVersion in object meta: ", Text(meta, "resourceVersion")));
  }
  return std::nullopt;
}
}  // namespace

Outcome ObjectStore::Delete(const ResourceType& type, const std::string& ns,
                            const std::string& name, const DeleteOptions& options) {
  MutexLock lock(mu_);
  Outcome out = DeleteLocked(type, ns, name, options);
  FinishForegroundDeletionsLocked();
  return out;
}

Outcome ObjectStore::DeleteLocked(const ResourceType& type, const std::string& ns,
                                  const std::string& name, const DeleteOptions& options) {
  if (options.propagation != "Background" && options.propagation != "Foreground" &&
      options.propagation != "Orphan") {
    return {kube::BadRequestStatus(StrCat("propagationPolicy: Unsupported value: \"",
                                          options.propagation,
                                          "\": supported values: \"Background\", \"Foreground\", "
                                          "\"Orphan\"")),
            {}};
  }
  const Key key = MakeKey(type.key(), type.namespaced ? ns : "", name);
  auto it = objects_.find(key);
  if (it == objects_.end()) return {kube::NotFoundStatus(type.group, type.resource, name), {}};
  json& object = it->second;
  const json& meta = MetaOf(object);
  if (std::optional<kube::ApiStatus> failed = FailedDeletePrecondition(type, name, meta, options)) {
    return {std::move(failed), {}};
  }
  if (type.resource == "namespaces") {
    // The namespace controller's work, done at once: everything in it goes.
    std::vector<std::pair<const ResourceType*, Key>> contents;
    for (const auto& [k, v] : objects_) {
      const ResourceType* t = TypeOfKeyLocked(k);
      if (t != nullptr && t->namespaced && Text(MetaOf(v), "namespace") == name) {
        contents.emplace_back(t, k);
      }
    }
    for (const auto& [t, k] : contents) {
      if (objects_.contains(k)) RemoveLocked(*t, k, "Background");
    }
  }
  if (type.group.empty() && type.resource == "pods") {
    if (std::optional<Outcome> marked = DeletePodGracefullyLocked(type, object, options)) {
      return *std::move(marked);
    }
  }
  const bool foreground = options.propagation == "Foreground";
  if (HasFinalizers(object) || foreground) {
    json& m = Meta(object);
    bool changed = false;
    if (!m.contains("deletionTimestamp")) {
      m["deletionTimestamp"] = Timestamp();
      m["deletionGracePeriodSeconds"] = 0;
      changed = true;
    }
    if (foreground) {
      json& finalizers = m["finalizers"];
      if (!finalizers.is_array()) finalizers = json::array();
      if (std::find(finalizers.begin(), finalizers.end(), "foregroundDeletion") ==
          finalizers.end()) {
        finalizers.push_back("foregroundDeletion");
        foreground_.insert(key);
        changed = true;
      }
      // The owner waits for its dependents, so they go now whoever else
      // collects garbage.
      CollectDependentsLocked(Text(m, "uid"), "Foreground");
    }
    if (changed) {
      m["resourceVersion"] = std::to_string(++resource_version_);
      RecordLocked("MODIFIED", type, object);
    }
    return {std::nullopt, objects_.at(key)};
  }
  json removed = object;
  RemoveLocked(type, key, options.propagation);
  return {std::nullopt, removed};
}

std::optional<Outcome> ObjectStore::DeletePodGracefullyLocked(const ResourceType& type, json& pod,
                                                              const DeleteOptions& options) {
  // As the real pod strategy: a pod no kubelet runs (unassigned, or already
  // finished) has nothing to stop, so it goes at once.
  const json& spec = pod.value("spec", json::object());
  const std::string phase = pod.value("status", json::object()).value("phase", "");
  int64_t grace = 30;
  if (spec.contains("terminationGracePeriodSeconds") &&
      spec["terminationGracePeriodSeconds"].is_number_integer()) {
    grace = spec["terminationGracePeriodSeconds"].get<int64_t>();
  }
  if (options.grace_period_seconds) grace = *options.grace_period_seconds;
  if (Text(spec, "nodeName").empty() || phase == "Succeeded" || phase == "Failed") grace = 0;
  json& m = Meta(pod);
  const bool terminating = m.contains("deletionTimestamp");
  if (grace <= 0) {
    if (!terminating || !HasFinalizers(pod)) return std::nullopt;
    grace = 0;  // finalizers hold it; fall through to shorten the grace
  }
  // A second delete may shorten the grace period, never lengthen it.
  if (terminating && m.value("deletionGracePeriodSeconds", int64_t{0}) <= grace) {
    return Outcome{std::nullopt, pod};
  }
  m["deletionTimestamp"] = FormatTimestampSeconds(clock_.Now() + std::chrono::seconds(grace));
  m["deletionGracePeriodSeconds"] = grace;
  m["resourceVersion"] = std::to_string(++resource_version_);
  RecordLocked("MODIFIED", type, pod);
  return Outcome{std::nullopt, pod};
}

void ObjectStore::RemoveLocked(const ResourceType& type, const Key& key,
                               const std::string& policy) {
  auto it = objects_.find(key);
  if (it == objects_.end()) return;
  json object = std::move(it->second);
  objects_.erase(it);
  Meta(object)["resourceVersion"] = std::to_string(++resource_version_);
  if (type.resource == "customresourcedefinitions") UnregisterCrdLocked(object);
  RecordLocked("DELETED", type, object);
  CollectDependentsLocked(Text(MetaOf(object), "uid"), policy);
}

void ObjectStore::CollectDependentsLocked(const std::string& owner_uid, const std::string& policy) {
  if (owner_uid.empty()) return;
  if (policy == "Background" && !collect_background_dependents_) return;
  std::vector<Key> dependents;
  for (const auto& [key, object] : objects_) {
    if (OwnedBy(object, owner_uid)) dependents.push_back(key);
  }
  for (const Key& key : dependents) {
    auto it = objects_.find(key);
    const ResourceType* type = TypeOfKeyLocked(key);
    if (it == objects_.end() || type == nullptr) continue;
    json& object = it->second;
    if (policy == "Orphan") {
      json& refs = Meta(object)["ownerReferences"];
      refs.erase(std::remove_if(refs.begin(), refs.end(),
                                [&](const json& r) { return Text(r, "uid") == owner_uid; }),
                 refs.end());
      Meta(object)["resourceVersion"] = std::to_string(++resource_version_);
      RecordLocked("MODIFIED", *type, object);
    } else {
      const json& meta = MetaOf(object);
      DeleteLocked(*type, Text(meta, "namespace"), Text(meta, "name"),
                   {.propagation = "Background"});
    }
  }
}

// An owner deleted in the foreground goes once no dependent is left. Only
// the owners this store put in that state (foreground_) are looked at.
void ObjectStore::FinishForegroundDeletionsLocked() {
  for (bool again = true; again;) {
    again = false;
    for (const Key& key : foreground_) {
      auto it = objects_.find(key);
      const ResourceType* type = TypeOfKeyLocked(key);
      if (it == objects_.end() || type == nullptr) {
        foreground_.erase(key);
        again = true;
        break;
      }
      const std::string uid = Text(MetaOf(it->second), "uid");
      bool has_dependents = false;
      for (const auto& [k, other] : objects_) {
        if (OwnedBy(other, uid)) {
          has_dependents = true;
          break;
        }
      }
      if (has_dependents) continue;
      json updated = it->second;
      json& list = Meta(updated)["finalizers"];
      list.erase(std::remove(list.begin(), list.end(), "foregroundDeletion"), list.end());
      const json& meta = MetaOf(it->second);
      const std::string ns = Text(meta, "namespace"), name = Text(meta, "name");
      foreground_.erase(key);  // `key` dangles from here on
      UpdateLocked(*type, ns, name, std::move(updated), false);
      again = true;
      break;
    }
  }
}

}  // namespace canhazgpu::kubesim
