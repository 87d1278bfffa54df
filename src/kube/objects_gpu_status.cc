#include "kube/objects_gpu_status.h"

#include "kube/json_object_impl.h"

// The JSON name of each modeled field of a NodeGpuStatus, as
// deploy/crds/nodegpustatuses.yaml spells them.

namespace canhazgpu::kube {

static constexpr auto Fields(Tag<NodeGpuStatusSpec>) {
  return std::tuple{Member("nodeName", &NodeGpuStatusSpec::node_name)};
}

static constexpr auto Fields(Tag<NodeGpuSummary>) {
  using T = NodeGpuSummary;
  return std::tuple{Member("total", &T::total),     Member("free", &T::free),
                    Member("held", &T::held),       Member("prepared", &T::prepared),
                    Member("shared", &T::shared),   Member("inUse", &T::in_use),
                    Member("tainted", &T::tainted), Member("mig", &T::mig)};
}

static constexpr auto Fields(Tag<NodeGpuHold>) {
  using T = NodeGpuHold;
  return std::tuple{Member("user", &T::user), Member("kind", &T::kind), Member("since", &T::since),
                    Member("until", &T::until)};
}

static constexpr auto Fields(Tag<NodeGpuClaim>) {
  using T = NodeGpuClaim;
  return std::tuple{Member("namespace", &T::namespace_name),
                    Member("name", &T::name),
                    Member("uid", &T::uid),
                    Member("pods", &T::pods),
                    Member("shareID", &T::share_id),
                    Member("memory", &T::memory)};
}

static constexpr auto Fields(Tag<NodeGpuLocalShare>) {
  using T = NodeGpuLocalShare;
  return std::tuple{Member("shareID", &T::share_id), Member("user", &T::user),
                    Member("kind", &T::kind),        Member("memory", &T::memory),
                    Member("since", &T::since),      Member("until", &T::until)};
}

static constexpr auto Fields(Tag<NodeGpuSharing>) {
  using T = NodeGpuSharing;
  return std::tuple{
      Member("shareableMemory", &T::shareable_memory), Member("freeMemory", &T::free_memory),
      Member("memoryIsolation", &T::memory_isolation), Member("localShares", &T::local_shares)};
}

static constexpr auto Fields(Tag<NodeGpuQueueKeep>) {
  using T = NodeGpuQueueKeep;
  return std::tuple{Member("user", &T::user), Member("memory", &T::memory),
                    Member("since", &T::since)};
}

static constexpr auto Fields(Tag<NodeGpuProcess>) {
  using T = NodeGpuProcess;
  return std::tuple{Member("pid", &T::pid), Member("user", &T::user),
                    Member("command", &T::command), Member("memoryBytes", &T::memory_bytes)};
}

static constexpr auto Fields(Tag<NodeGpuUsage>) {
  using T = NodeGpuUsage;
  return std::tuple{Member("memoryUsedBytes", &T::memory_used_bytes), Member("users", &T::users),
                    Member("processes", &T::processes)};
}

static constexpr auto Fields(Tag<NodeGpuTaint>) {
  using T = NodeGpuTaint;
  return std::tuple{Member("key", &T::key), Member("value", &T::value),
                    Member("effect", &T::effect), Member("reason", &T::reason),
                    Member("source", &T::source)};
}

static constexpr auto Fields(Tag<NodeGpuDevice>) {
  using T = NodeGpuDevice;
  return std::tuple{Member("name", &T::name),
                    Member("type", &T::type),
                    Member("uuid", &T::uuid),
                    Member("index", &T::index),
                    Member("productName", &T::product_name),
                    Member("state", &T::state),
                    Member("held", &T::held),
                    Member("claims", &T::claims),
                    Member("sharing", &T::sharing),
                    Member("keptFor", &T::kept_for),
                    Member("usage", &T::usage),
                    Member("taints", &T::taints)};
}

static constexpr auto Fields(Tag<NodeGpuStatusStatus>) {
  using T = NodeGpuStatusStatus;
  return std::tuple{Member("updateTime", &T::update_time),
                    Member("driverVersion", &T::driver_version), Member("summary", &T::summary),
                    Member("devices", &T::devices)};
}

static constexpr auto Fields(Tag<NodeGpuStatus>) {
  using T = NodeGpuStatus;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata), Member("spec", &T::spec),
                    Member("status", &T::status)};
}

template struct JsonObject<NodeGpuStatusSpec>;
template struct JsonObject<NodeGpuSummary>;
template struct JsonObject<NodeGpuHold>;
template struct JsonObject<NodeGpuClaim>;
template struct JsonObject<NodeGpuLocalShare>;
template struct JsonObject<NodeGpuSharing>;
template struct JsonObject<NodeGpuQueueKeep>;
template struct JsonObject<NodeGpuProcess>;
template struct JsonObject<NodeGpuUsage>;
template struct JsonObject<NodeGpuTaint>;
template struct JsonObject<NodeGpuDevice>;
template struct JsonObject<NodeGpuStatusStatus>;
template struct JsonObject<NodeGpuStatus>;

const NodeGpuDevice* NodeGpuStatusStatus::Find(const std::string& name) const {
  for (const NodeGpuDevice& d : devices) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

const std::string& NodeGpuStatus::NodeName() const {
  return spec.node_name.empty() ? metadata.name : spec.node_name;
}

}  // namespace canhazgpu::kube
