#include "kube/objects_meta.h"

#include "kube/json_object_impl.h"

namespace canhazgpu::kube {

static constexpr auto Fields(Tag<OwnerReference>) {
  using T = OwnerReference;
  return std::tuple{Member("apiVersion", &T::api_version),
                    Member("kind", &T::kind),
                    Member("name", &T::name),
                    Member("uid", &T::uid),
                    Member("controller", &T::controller),
                    Member("blockOwnerDeletion", &T::block_owner_deletion)};
}

static constexpr auto Fields(Tag<ObjectMeta>) {
  using T = ObjectMeta;
  return std::tuple{Member("name", &T::name),
                    Member("generateName", &T::generate_name),
                    Member("namespace", &T::namespace_name),
                    Member("uid", &T::uid),
                    Member("resourceVersion", &T::resource_version),
                    Member("generation", &T::generation),
                    Member("creationTimestamp", &T::creation_timestamp),
                    Member("deletionTimestamp", &T::deletion_timestamp),
                    Member("labels", &T::labels),
                    Member("annotations", &T::annotations),
                    Member("finalizers", &T::finalizers),
                    Member("ownerReferences", &T::owner_references)};
}

static constexpr auto Fields(Tag<Condition>) {
  using T = Condition;
  return std::tuple{Member("type", &T::type),
                    Member("status", &T::status),
                    Member("observedGeneration", &T::observed_generation),
                    Member("lastProbeTime", &T::last_probe_time),
                    Member("lastHeartbeatTime", &T::last_heartbeat_time),
                    Member("lastTransitionTime", &T::last_transition_time),
                    Member("reason", &T::reason),
                    Member("message", &T::message)};
}

template struct JsonObject<OwnerReference>;
template struct JsonObject<ObjectMeta>;
template struct JsonObject<Condition>;

}  // namespace canhazgpu::kube
