#include "simkubelet/pod_hosts.h"

#include <algorithm>
#include <tuple>

#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::simkubelet {
namespace {

using nlohmann::json;

constexpr size_t kMaxHostnameLength = 63;
constexpr char kClusterDomain[] = "cluster.local";

// The string members of the object at `pointer` (labels, a selector).
std::map<std::string, std::string> StringMapAt(const json& object,
                                               const json::json_pointer& pointer) {
  std::map<std::string, std::string> out;
  const json map = object.value(pointer, json());
  if (!map.is_object()) return out;
  for (const auto& [key, value] : map.items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

bool SelectsPod(const HeadlessService& service, const PodHostEntry& pod) {
  if (service.ns != pod.ns || pod.ip.empty()) return false;
  if (!pod.ready && !service.publish_not_ready) return false;
  return std::all_of(service.selector.begin(), service.selector.end(), [&](const auto& kv) {
    auto it = pod.labels.find(kv.first);
    return it != pod.labels.end() && it->second == kv.second;
  });
}

// `name` in namespace `ns` as a pod in namespace `viewer` may write it:
// fully qualified, then shorter as the DNS search path allows.
std::string HostsNames(const std::string& name, const std::string& ns, const std::string& viewer) {
  std::string names =
      StrCat(name, ".", ns, ".svc.", kClusterDomain, "\t", name, ".", ns, ".svc\t", name, ".", ns);
  if (ns == viewer) names += StrCat("\t", name);
  return names;
}

// The lines of one Service: its pods' own names, then the Service's.
void AppendServiceLines(std::string& out, const HeadlessService& service,
                        const std::vector<const PodHostEntry*>& selected,
                        const std::string& viewer) {
  for (const PodHostEntry* p : selected) {
    if (p->subdomain != service.name || p->hostname.empty()) continue;
    out += StrCat(p->ip, "\t",
                  HostsNames(StrCat(p->hostname, ".", service.name), service.ns, viewer), "\n");
  }
  for (const PodHostEntry* p : selected) {
    out += StrCat(p->ip, "\t", HostsNames(service.name, service.ns, viewer), "\n");
  }
}

}  // namespace

std::string PodHostname(const json& pod) {
  std::string name = kube::StringAt(pod, "/spec/hostname"_json_pointer);
  if (name.empty()) name = kube::StringAt(pod, "/metadata/name"_json_pointer);
  if (name.size() > kMaxHostnameLength) {
    name.resize(kMaxHostnameLength);
    while (!name.empty() && (name.back() == '-' || name.back() == '.')) name.pop_back();
  }
  return name;
}

PodHostEntry PodHostEntryOf(const json& pod) {
  PodHostEntry entry;
  entry.uid = kube::StringAt(pod, "/metadata/uid"_json_pointer);
  entry.ns = kube::StringAt(pod, "/metadata/namespace"_json_pointer);
  entry.name = kube::StringAt(pod, "/metadata/name"_json_pointer);
  entry.hostname = PodHostname(pod);
  entry.subdomain = kube::StringAt(pod, "/spec/subdomain"_json_pointer);
  entry.labels = StringMapAt(pod, "/metadata/labels"_json_pointer);
  return entry;
}

std::optional<HeadlessService> HeadlessServiceOf(const json& service) {
  if (kube::StringAt(service, "/spec/clusterIP"_json_pointer) != "None") return std::nullopt;
  HeadlessService s;
  s.ns = kube::StringAt(service, "/metadata/namespace"_json_pointer);
  s.name = kube::StringAt(service, "/metadata/name"_json_pointer);
  s.selector = StringMapAt(service, "/spec/selector"_json_pointer);
  const json publish = service.value("/spec/publishNotReadyAddresses"_json_pointer, json());
  s.publish_not_ready = publish.is_boolean() && publish.get<bool>();
  if (s.name.empty() || s.selector.empty()) return std::nullopt;
  return s;
}

std::string PodHostsFile(std::string_view machine_hosts, const PodHostEntry& pod,
                         const std::vector<PodHostEntry>& pods,
                         const std::vector<HeadlessService>& services) {
  std::string out =
      "# Kubernetes-managed hosts file (the simulated cluster's: src/simkubelet/pod_hosts.h).\n";
  out += machine_hosts;
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "# This pod, as the kubelet names it.\n";
  if (pod.subdomain.empty()) {
    out += StrCat(pod.ip, "\t", pod.hostname, "\n");
  } else {
    out += StrCat(pod.ip, "\t", pod.hostname, ".", pod.subdomain, ".", pod.ns, ".svc.",
                  kClusterDomain, "\t", pod.hostname, "\n");
  }
  // The pod's own namespace first: its short names win where two match.
  std::vector<const HeadlessService*> order;
  for (const HeadlessService& s : services) order.push_back(&s);
  std::sort(order.begin(), order.end(), [&](const auto* a, const auto* b) {
    return std::make_tuple(a->ns != pod.ns, a->ns, a->name) <
           std::make_tuple(b->ns != pod.ns, b->ns, b->name);
  });
  std::vector<const PodHostEntry*> sorted;
  for (const PodHostEntry& p : pods) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return std::tie(a->hostname, a->name, a->uid) < std::tie(b->hostname, b->name, b->uid);
  });
  out += "# The pods behind headless Services, as the cluster DNS names them.\n";
  for (const HeadlessService* s : order) {
    std::vector<const PodHostEntry*> selected;
    for (const PodHostEntry* p : sorted) {
      if (SelectsPod(*s, *p)) selected.push_back(p);
    }
    AppendServiceLines(out, *s, selected, pod.ns);
  }
  return out;
}

}  // namespace canhazgpu::simkubelet
