// What the control plane wrote itself that its informers have not delivered
// yet: an allocation it just wrote must count at once, or the next pod could
// be given the same device. Thread-safe (the informers' delete handlers
// erase from it).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/mutex.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::simcluster {

class Overlay {
 public:
  // Remembers `object` (written by us) until an informer shows the key at
  // `caught_up_at` or a later version.
  void Put(const std::string& key, nlohmann::json object, int64_t caught_up_at);
  // The object was deleted: what we wrote of it no longer matters.
  void Erase(const std::string& key);
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
};

// Records an object we wrote (as the server returned it) in the overlay and
// in the view's map, so the rest of the pass sees it.
void Wrote(Overlay& overlay, std::map<std::string, nlohmann::json>& objects,
           const nlohmann::json& object);

}  // namespace canhazgpu::simcluster
