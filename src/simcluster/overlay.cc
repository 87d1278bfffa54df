#include "simcluster/overlay.h"

#include "clusterview/view.h"

namespace canhazgpu::simcluster {

using clusterview::KeyOf;
using clusterview::VersionOf;
using nlohmann::json;

void Overlay::Put(const std::string& key, json object, int64_t caught_up_at) {
  MutexLock lock(mu_);
  entries_[key] = {std::move(object), caught_up_at};
}

void Overlay::Erase(const std::string& key) {
  MutexLock lock(mu_);
  entries_.erase(key);
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
