#include "simcluster/overlay.h"

#include "clusterview/view.h"

namespace canhazgpu::simcluster {

using clusterview::KeyOf;
using clusterview::VersionOf;
using nlohmann::json;

namespace {

// Far more deletions than can race one pass's writes.
constexpr size_t kRememberedDeletions = 4096;

std::string UidOf(const json& object) {
  return object.value("/metadata/uid"_json_pointer, std::string());
}

}  // namespace

void Overlay::Put(const std::string& key, json object, int64_t caught_up_at) {
  MutexLock lock(mu_);
  if (deleted_.contains(UidOf(object))) return;
  entries_[key] = {std::move(object), caught_up_at};
}

void Overlay::Erase(const json& deleted) {
  MutexLock lock(mu_);
  entries_.erase(KeyOf(deleted));
  const std::string uid = UidOf(deleted);
  if (uid.empty() || !deleted_.insert(uid).second) return;
  deleted_order_.push_back(uid);
  if (deleted_order_.size() > kRememberedDeletions) {
    deleted_.erase(deleted_order_.front());
    deleted_order_.pop_front();
  }
}

void Overlay::Apply(std::map<std::string, json>& objects) {
  MutexLock lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto seen = objects.find(it->first);
    if (seen != objects.end() && VersionOf(seen->second) >= it->second.caught_up_at) {
      it = entries_.erase(it);
      continue;
    }
    objects[it->first] = it->second.object;
    ++it;
  }
}

void Wrote(Overlay& overlay, std::map<std::string, json>& objects, const json& object) {
  const std::string key = KeyOf(object);
  overlay.Put(key, object, VersionOf(object));
  objects[key] = object;
}

}  // namespace canhazgpu::simcluster
