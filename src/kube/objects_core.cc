#include "kube/objects_core.h"

#include "kube/json_object_impl.h"

// The JSON name of each modeled field. Everything else about reading and
// writing is in json_object_impl.h.

namespace canhazgpu::kube {

// --- Pod --------------------------------------------------------------------

static constexpr auto Fields(Tag<ContainerResourceClaim>) {
  using T = ContainerResourceClaim;
  return std::tuple{Member("name", &T::name), Member("request", &T::request)};
}

static constexpr auto Fields(Tag<ResourceRequirements>) {
  using T = ResourceRequirements;
  return std::tuple{Member("limits", &T::limits), Member("requests", &T::requests),
                    Member("claims", &T::claims)};
}

static constexpr auto Fields(Tag<EnvVar>) {
  using T = EnvVar;
  return std::tuple{Member("name", &T::name), Member("value", &T::value),
                    Member("valueFrom", &T::value_from)};
}

static constexpr auto Fields(Tag<Container>) {
  using T = Container;
  return std::tuple{Member("name", &T::name),       Member("image", &T::image),
                    Member("command", &T::command), Member("args", &T::args),
                    Member("env", &T::env),         Member("resources", &T::resources)};
}

static constexpr auto Fields(Tag<PodResourceClaim>) {
  using T = PodResourceClaim;
  return std::tuple{Member("name", &T::name), Member("resourceClaimName", &T::resource_claim_name),
                    Member("resourceClaimTemplateName", &T::resource_claim_template_name)};
}

static constexpr auto Fields(Tag<PodSpec>) {
  using T = PodSpec;
  return std::tuple{Member("nodeName", &T::node_name),
                    Member("initContainers", &T::init_containers),
                    Member("containers", &T::containers),
                    Member("resourceClaims", &T::resource_claims),
                    Member("restartPolicy", &T::restart_policy),
                    Member("activeDeadlineSeconds", &T::active_deadline_seconds),
                    Member("nodeSelector", &T::node_selector),
                    Member("serviceAccountName", &T::service_account_name)};
}

static constexpr auto Fields(Tag<PodResourceClaimStatus>) {
  using T = PodResourceClaimStatus;
  return std::tuple{Member("name", &T::name), Member("resourceClaimName", &T::resource_claim_name)};
}

static constexpr auto Fields(Tag<PodStatus>) {
  using T = PodStatus;
  return std::tuple{Member("phase", &T::phase),
                    Member("conditions", &T::conditions),
                    Member("message", &T::message),
                    Member("reason", &T::reason),
                    Member("startTime", &T::start_time),
                    Member("initContainerStatuses", &T::init_container_statuses),
                    Member("containerStatuses", &T::container_statuses),
                    Member("resourceClaimStatuses", &T::resource_claim_statuses)};
}

static constexpr auto Fields(Tag<Pod>) {
  using T = Pod;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata), Member("spec", &T::spec),
                    Member("status", &T::status)};
}

// --- Node, Namespace --------------------------------------------------------

static constexpr auto Fields(Tag<NodeStatus>) {
  using T = NodeStatus;
  return std::tuple{Member("capacity", &T::capacity), Member("allocatable", &T::allocatable),
                    Member("conditions", &T::conditions)};
}

static constexpr auto Fields(Tag<Node>) {
  using T = Node;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata), Member("status", &T::status)};
}

static constexpr auto Fields(Tag<NamespaceStatus>) {
  return std::tuple{Member("phase", &NamespaceStatus::phase)};
}

static constexpr auto Fields(Tag<Namespace>) {
  using T = Namespace;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata), Member("status", &T::status)};
}

// --- Event ------------------------------------------------------------------

static constexpr auto Fields(Tag<EventObjectReference>) {
  using T = EventObjectReference;
  return std::tuple{Member("apiVersion", &T::api_version),
                    Member("kind", &T::kind),
                    Member("namespace", &T::namespace_name),
                    Member("name", &T::name),
                    Member("uid", &T::uid),
                    Member("resourceVersion", &T::resource_version),
                    Member("fieldPath", &T::field_path)};
}

static constexpr auto Fields(Tag<EventReportingSource>) {
  return std::tuple{Member("component", &EventReportingSource::component),
                    Member("host", &EventReportingSource::host)};
}

static constexpr auto Fields(Tag<Event>) {
  using T = Event;
  return std::tuple{Member("apiVersion", &T::api_version),
                    Member("kind", &T::kind),
                    Member("metadata", &T::metadata),
                    Member("involvedObject", &T::involved_object),
                    Member("reason", &T::reason),
                    Member("message", &T::message),
                    Member("type", &T::type),
                    Member("source", &T::source),
                    Member("count", &T::count),
                    Member("firstTimestamp", &T::first_timestamp),
                    Member("lastTimestamp", &T::last_timestamp),
                    Member("eventTime", &T::event_time),
                    Member("action", &T::action),
                    Member("reportingComponent", &T::reporting_component),
                    Member("reportingInstance", &T::reporting_instance)};
}

// --- ConfigMap, Lease -------------------------------------------------------

static constexpr auto Fields(Tag<ConfigMap>) {
  using T = ConfigMap;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata),      Member("data", &T::data),
                    Member("binaryData", &T::binary_data), Member("immutable", &T::immutable)};
}

static constexpr auto Fields(Tag<LeaseSpec>) {
  using T = LeaseSpec;
  return std::tuple{Member("holderIdentity", &T::holder_identity),
                    Member("leaseDurationSeconds", &T::lease_duration_seconds),
                    Member("acquireTime", &T::acquire_time), Member("renewTime", &T::renew_time),
                    Member("leaseTransitions", &T::lease_transitions)};
}

static constexpr auto Fields(Tag<Lease>) {
  using T = Lease;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata), Member("spec", &T::spec)};
}

template struct JsonObject<ContainerResourceClaim>;
template struct JsonObject<ResourceRequirements>;
template struct JsonObject<EnvVar>;
template struct JsonObject<Container>;
template struct JsonObject<PodResourceClaim>;
template struct JsonObject<PodSpec>;
template struct JsonObject<PodResourceClaimStatus>;
template struct JsonObject<PodStatus>;
template struct JsonObject<Pod>;
template struct JsonObject<NodeStatus>;
template struct JsonObject<Node>;
template struct JsonObject<NamespaceStatus>;
template struct JsonObject<Namespace>;
template struct JsonObject<EventObjectReference>;
template struct JsonObject<EventReportingSource>;
template struct JsonObject<Event>;
template struct JsonObject<ConfigMap>;
template struct JsonObject<LeaseSpec>;
template struct JsonObject<Lease>;

}  // namespace canhazgpu::kube
