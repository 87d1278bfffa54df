// The hosts file each pod of the simulated cluster sees as /etc/hosts
// (pod_network.h keeps it current, pod_sandbox.h mounts it), as pure
// functions. It stands in for both the kubelet's managed etc-hosts and
// the cluster DNS:
//
//   # Kubernetes-managed hosts file (the simulated cluster's: ...)
//   <the machine's /etc/hosts, as it is>
//   # This pod, as the kubelet names it.
//   <ip>  <hostname>.<subdomain>.<ns>.svc.cluster.local  <hostname>
//                      (with a subdomain; else just <hostname>)
//   # The pods behind headless Services, as the cluster DNS names them.
//   <ip>  <hostname>.<svc>.<ns>.svc.cluster.local  <hostname>.<svc>.<ns>.svc
//         <hostname>.<svc>.<ns>  [<hostname>.<svc>]
//   <ip>  <svc>.<ns>.svc.cluster.local  <svc>.<ns>.svc  <svc>.<ns>  [<svc>]
//
// A Service's lines are those of every pod it selects (by spec.selector,
// in its namespace) that has an address and is ready — or every such pod,
// with publishNotReadyAddresses — and the hostname lines only for pods
// whose spec.subdomain names the Service, as CoreDNS answers. The short
// names in brackets are what a pod's DNS search path (<ns>.svc.cluster.local
// first) resolves: they are written only into the files of pods in the
// Service's namespace, whose records come first.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace canhazgpu::simkubelet {

struct PodHostEntry {
  std::string uid;
  std::string ns;
  std::string name;
  std::string hostname;   // PodHostname()
  std::string subdomain;  // spec.subdomain; "" when unset
  std::map<std::string, std::string> labels;
  std::string ip;      // "" until it has one
  bool ready = false;  // every container running (no probes)
};

struct HeadlessService {
  std::string ns;
  std::string name;
  std::map<std::string, std::string> selector;  // never empty
  bool publish_not_ready = false;
};

// spec.hostname, else the pod's name, cut to 63 characters and without a
// trailing '-' or '.' after the cut, as the kubelet names the pod's host.
std::string PodHostname(const nlohmann::json& pod);

// What the kubelet knows of `pod` for its names (no ip, not ready).
PodHostEntry PodHostEntryOf(const nlohmann::json& pod);

// A Service whose names resolve to its pods: clusterIP "None" and a
// non-empty selector. nullopt for any other (a Service without a selector
// has hand-made endpoints, which the simulator does not read).
std::optional<HeadlessService> HeadlessServiceOf(const nlohmann::json& service);

// The hosts file of `pod` (which has its ip) among `pods` (itself
// included or not) and `services`, in the layout above; `machine_hosts` is
// the machine's /etc/hosts text.
std::string PodHostsFile(std::string_view machine_hosts, const PodHostEntry& pod,
                         const std::vector<PodHostEntry>& pods,
                         const std::vector<HeadlessService>& services);

}  // namespace canhazgpu::simkubelet
