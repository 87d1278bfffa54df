// What the control plane wrote itself that its informers have not delivered
// yet: an allocation it just wrote must count at once, or the next pod could
// be given the same device. Thread-safe (the informers' delete handlers
// erase from it).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>

#include "core/mutex.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::simcluster {

class Overlay {
 public:
  // Remembers `object` (written by us) until an informer shows the key at
  // `caught_up_at` or a later version. An object already deleted is not
  // remembered: a write that raced the deletion (the server answered, then
  // an informer delivered the delete before this Put) would otherwise stay
  // in every view for good, as the informer never shows that key again.
  void Put(const std::string& key, nlohmann::json object, int64_t caught_up_at);
  // `deleted` (as an informer or a write delivered it) was deleted: what we
  // wrote of it no longer matters, and nothing of it may come back.
  void Erase(const nlohmann::json& deleted);
  // Lays the remembered objects over `objects` (from an informer), and
  // forgets those the informer has caught up with.
  void Apply(std::map<std::string, nlohmann::json>& objects);

 private:
  struct Entry {
    nlohmann::json object;
    int64_t caught_up_at = 0;
  };
  Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // The uids of the latest deletions, oldest first; bounded, because only a
  // write racing a deletion needs them.
  std::deque<std::string> deleted_order_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> deleted_ ABSL_GUARDED_BY(mu_);
};

// Records an object we wrote (as the server returned it) in the overlay and
// in the view's map, so the rest of the pass sees it.
void Wrote(Overlay& overlay, std::map<std::string, nlohmann::json>& objects,
           const nlohmann::json& object);

}  // namespace canhazgpu::simcluster
