// What the control plane knows of the cluster during one pass: the
// informers' objects, overlaid with what it wrote itself that the informers
// have not delivered yet (an allocation it just wrote must count at once, or
// the next pod could be given the same device), with the slices and device
// classes already turned into the allocator's types.
// Overlay is thread-safe (the informers' delete handlers erase from it);
// a View is a plain value used by one thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "dra/allocator.h"
#include "nlohmann/json.hpp"
#include "simcluster/slice_pools.h"

namespace canhazgpu::simcluster {

// "ns/name", or "name" for a cluster-scoped object.
std::string KeyOf(const nlohmann::json& object);

// The object's metadata.resourceVersion as a number (the simulated server
// counts them; a real one promises no order), 0 if none.
int64_t VersionOf(const nlohmann::json& object);

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
  std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

struct View {
  std::map<std::string, nlohmann::json> pods;       // by "ns/name"
  std::map<std::string, nlohmann::json> claims;     // by "ns/name"
  std::map<std::string, nlohmann::json> templates;  // by "ns/name"
  std::map<std::string, nlohmann::json> nodes;      // by name
  std::map<std::string, nlohmann::json> classes;    // by name, as read
  SlicePools pools;
};

// Records an object we wrote (as the server returned it) in the overlay and
// in the view's map, so the rest of the pass sees it.
void Wrote(Overlay& overlay, std::map<std::string, nlohmann::json>& objects,
           const nlohmann::json& object);

// Objects of a list by key.
std::map<std::string, nlohmann::json> ByKey(const std::vector<nlohmann::json>& objects);

// Turns the informers' slices into pools; unreadable slices become problems.
SlicePools PoolsFromJson(const std::vector<nlohmann::json>& slices);

}  // namespace canhazgpu::simcluster
