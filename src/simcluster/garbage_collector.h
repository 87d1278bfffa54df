// The garbage collector of kube-controller-manager, as far as the simulated
// cluster needs it: an object whose every owner (metadata.ownerReferences,
// matched by uid) is gone is deleted, in the background, with a uid
// precondition so that an object recreated under the same name is spared.
// An owner counts as gone when the API says NotFound for it, or holds an
// object of that name with another uid; before deleting anything the owner
// is read from the API, not from the informers, which may not have seen a
// just-created owner yet (the real collector does the same). An owner of a
// kind this collector does not know (kOwnerKinds: the core, DRA and workload
// kinds) is taken to exist. Not emulated: foreground deletion and
// blockOwnerDeletion (the store does foreground itself, kubesim), orphaning
// (likewise), and removing the references to gone owners from an object
// that still has a living one (it is just kept).
// Not thread-safe: the control plane's one loop thread calls it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::simcluster {

// The objects of one resource, as an informer lists them.
struct WatchedObjects {
  const kube::ResourceRef* ref;
  std::vector<nlohmann::json> objects;
};

class GarbageCollector {
 public:
  GarbageCollector(kube::Client& client, std::function<void(const std::string&)> log)
      : client_(client), log_(std::move(log)) {}

  // Deletes the objects of `watched` whose owners are all gone. Owners are
  // first looked for among `watched` (by uid); only an object none of whose
  // owners is there costs reads. Objects being deleted are left alone.
  // Returns how many objects were deleted.
  int Collect(const std::vector<WatchedObjects>& watched);

 private:
  // Whether the owner `ref` of an object in namespace `ns` is gone, by the
  // API; false when that cannot be told (an unknown kind, a failed read).
  bool OwnerGone(const nlohmann::json& ref, const std::string& ns);

  kube::Client& client_;
  std::function<void(const std::string&)> log_;
};

}  // namespace canhazgpu::simcluster
