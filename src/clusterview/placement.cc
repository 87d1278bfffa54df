#include "clusterview/placement.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <variant>

#include "clusterview/claim_spec.h"
#include "clusterview/node_fit.h"
#include "core/strings.h"
#include "kube/json_object.h"
#include "kube/objects_resource.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;

// The DynamicResources plugin's reasons (kube-scheduler 1.34).
constexpr char kCannotAllocate[] = "cannot allocate all claims";
constexpr char kNotAvailableOnNode[] = "resourceclaim not available on the node";

bool Allocated(const json& claim) {
  const json a = claim.value("/status/allocation"_json_pointer, json());
  return a.is_object() && !a.empty();
}

bool PodDone(const json& pod) {
  const std::string phase = kube::StringAt(pod, "/status/phase"_json_pointer);
  return phase == "Succeeded" || phase == "Failed";
}

// The node an allocated claim is limited to ("" = any node).
std::string AllocatedNode(const json& claim) {
  const json terms =
      claim.value("/status/allocation/nodeSelector/nodeSelectorTerms"_json_pointer, json::array());
  for (const json& term : terms) {
    for (const json& field : term.value("matchFields", json::array())) {
      const json values = field.value("values", json::array());
      if (field.value("key", "") == "metadata.name" && field.value("operator", "") == "In" &&
          values.size() == 1 && values[0].is_string()) {
        return values[0].get<std::string>();
      }
    }
  }
  return "";
}

// A device some claim in the cluster has, and who has it, for the
// explanation ("default/train-gpu-x2k9q (pod train)").
struct TakenDevice {
  std::string pool;
  std::string device;
  std::string holder;
};

std::vector<TakenDevice> TakenDevices(const View& view) {
  std::vector<TakenDevice> out;
  for (const auto& [key, claim] : view.claims) {
    if (!Allocated(claim)) continue;
    std::vector<std::string> pods;
    for (const json& r : claim.value("/status/reservedFor"_json_pointer, json::array()))
      if (r.value("resource", "") == "pods") pods.push_back(r.value("name", ""));
    std::string holder = key;
    if (!pods.empty())
      holder += StrCat(" (pod", pods.size() > 1 ? "s " : " ", Join(pods, ", "), ")");
    for (const json& r :
         claim.value("/status/allocation/devices/results"_json_pointer, json::array())) {
      if (r.value("adminAccess", false)) continue;  // not considered allocated
      out.push_back({r.value("pool", ""), r.value("device", ""), holder});
    }
  }
  return out;
}

struct PodClaim {
  std::string key;
  json object;
  std::optional<dra::Claim> spec;  // set when it still needs an allocation
};

// The pod's claims, or the message why they cannot be used (yet).
std::variant<std::vector<PodClaim>, std::string> ResolveClaims(const View& view, const json& pod) {
  const std::string ns = kube::StringAt(pod, "/metadata/namespace"_json_pointer);
  const std::string uid = kube::StringAt(pod, "/metadata/uid"_json_pointer);
  std::vector<PodClaim> out;
  const json entries = pod.value("/spec/resourceClaims"_json_pointer, json::array());
  const auto names = PodClaimNames(pod);
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& [entry, name] = names[i];
    const std::string template_name = entries[i].value("resourceClaimTemplateName", "");
    if (name.empty()) {
      std::string why = StrCat(
          "waiting for dynamic resource controller to create the resourceclaim \"", entry, "\"");
      if (!template_name.empty() && !view.templates.contains(StrCat(ns, "/", template_name)))
        why += StrCat(" (resourceclaimtemplate ", ns, "/", template_name, " does not exist)");
      return why;
    }
    auto it = view.claims.find(StrCat(ns, "/", name));
    if (it == view.claims.end()) return StrCat("resourceclaim \"", name, "\" not found");
    const json& claim = it->second;
    if (!template_name.empty()) {
      bool owned = false;
      for (const json& o : claim.value("/metadata/ownerReferences"_json_pointer, json::array()))
        owned |= o.value("uid", "") == uid && o.value("controller", false);
      if (!owned) {
        return StrCat("resourceclaim \"", name, "\" was not created for pod ", KeyOf(pod),
                      " (pod is not owner)");
      }
    }
    if (!kube::StringAt(claim, "/metadata/deletionTimestamp"_json_pointer).empty())
      return StrCat("resourceclaim \"", name, "\" is being deleted");
    PodClaim c{it->first, claim, std::nullopt};
    if (!Allocated(claim)) {
      auto typed = kube::ResourceClaim::FromJson(claim);
      if (!typed.ok()) return StrCat("resourceclaim ", it->first, ": ", typed.status().message());
      auto spec = ClaimFromSpec(typed->spec, it->first);
      if (!spec.ok()) return StrCat("resourceclaim ", it->first, ": ", spec.status().message());
      c.spec = *std::move(spec);
    }
    out.push_back(std::move(c));
  }
  return out;
}

// How close a node came: the more claims allocated, the better; then one
// that could fit later over one that never can; then more free devices.
struct Attempt {
  std::string node;
  std::string claim;
  dra::Explanation why;
  int claims_done = 0;
  int available = 0;

  auto Rank() const { return std::make_tuple(claims_done, !why.never, available); }
};

std::string Unavailable(size_t nodes, const std::string& reason) {
  return StrCat("0/", nodes, " nodes are available: ", reason, ".");
}

std::string TrimNewline(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> PodClaimNames(const json& pod) {
  std::map<std::string, std::string> generated;
  for (const json& s : pod.value("/status/resourceClaimStatuses"_json_pointer, json::array()))
    generated[s.value("name", "")] = s.value("resourceClaimName", "");
  std::vector<std::pair<std::string, std::string>> out;
  for (const json& e : pod.value("/spec/resourceClaims"_json_pointer, json::array())) {
    const std::string entry = e.value("name", "");
    const std::string named = e.value("resourceClaimName", "");
    out.emplace_back(entry, !named.empty() ? named : generated[entry]);
  }
  return out;
}

bool ReservedFor(const json& claim, const std::string& uid) {
  for (const json& r : claim.value("/status/reservedFor"_json_pointer, json::array()))
    if (r.value("uid", "") == uid) return true;
  return false;
}

json AllocationJson(const json& claim, const dra::Allocation& allocation, const std::string& node,
                    const View& view) {
  const json requests = claim.value("/spec/devices/requests"_json_pointer, json::array());
  // The JSON of the request or sub-request a result names.
  auto request_json = [&](const std::string& name) -> json {
    const std::string base = name.substr(0, name.find('/'));
    const std::string sub = name.find('/') == std::string::npos ? "" : name.substr(base.size() + 1);
    for (const json& r : requests) {
      if (r.value("name", "") != base) continue;
      if (sub.empty()) return r.value("exactly", json::object());
      for (const json& s : r.value("firstAvailable", json::array()))
        if (s.value("name", "") == sub) return s;
    }
    return json::object();
  };
  json results = json::array();
  std::vector<std::pair<std::string, std::vector<std::string>>> classes;  // class, requests
  std::set<std::string> allocated_requests;
  for (const dra::AllocatedDevice& d : allocation.devices) {
    json r = {{"request", d.request}, {"driver", d.driver}, {"pool", d.pool}, {"device", d.device}};
    if (d.admin_access) r["adminAccess"] = true;
    const json request = request_json(d.request);
    const json tolerations = request.value("tolerations", json::array());
    if (!tolerations.empty()) r["tolerations"] = tolerations;
    results.push_back(std::move(r));
    const std::string cls = request.value("deviceClassName", "");
    auto it =
        std::find_if(classes.begin(), classes.end(), [&](const auto& c) { return c.first == cls; });
    if (it == classes.end()) it = classes.insert(classes.end(), {cls, {}});
    if (std::find(it->second.begin(), it->second.end(), d.request) == it->second.end())
      it->second.push_back(d.request);
    allocated_requests.insert(d.request);
    allocated_requests.insert(d.request.substr(0, d.request.find('/')));
  }
  // Class configuration first, then the claim's, as the allocator orders it.
  json config = json::array();
  for (const auto& [cls, names] : classes) {
    auto c = view.classes.find(cls);
    if (c == view.classes.end()) continue;
    for (const json& entry : c->second.value("/spec/config"_json_pointer, json::array())) {
      config.push_back({{"source", "FromClass"},
                        {"requests", names},
                        {"opaque", entry.value("opaque", json())}});
    }
  }
  for (const json& entry : claim.value("/spec/devices/config"_json_pointer, json::array())) {
    const json names = entry.value("requests", json::array());
    bool applies = names.empty();
    for (const json& n : names) applies |= n.is_string() && allocated_requests.contains(n);
    if (!applies) continue;
    json c = {{"source", "FromClaim"}};
    if (!names.empty()) c["requests"] = names;
    c["opaque"] = entry.value("opaque", json());
    config.push_back(std::move(c));
  }
  json devices = {{"results", results}};
  if (!config.empty()) devices["config"] = config;
  json out = {{"devices", devices}};
  bool node_local = false;
  for (const NodePool& p : view.pools.pools)
    node_local |= p.pool.pool == allocation.node && !p.node.empty();
  if (node_local) {
    out["nodeSelector"] = {
        {"nodeSelectorTerms",
         {{{"matchFields",
            {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}}}}}}}};
  }
  return out;
}

Placement PlacePod(const View& view, const json& pod) {
  Placement out;
  const size_t n_nodes = view.nodes.size();
  auto resolved = ResolveClaims(view, pod);
  if (auto* why = std::get_if<std::string>(&resolved)) {
    out.message = Unavailable(n_nodes, *why);
    return out;
  }
  std::vector<PodClaim>& claims = std::get<std::vector<PodClaim>>(resolved);

  // Claims allocated before pin the pod to their node.
  std::set<std::string> pinned;
  bool needs_allocation = false;
  std::set<std::string> used_classes;
  for (const PodClaim& c : claims) {
    if (!c.spec) {
      const std::string node = AllocatedNode(c.object);
      if (!node.empty()) pinned.insert(node);
      continue;
    }
    needs_allocation = true;
    for (const dra::DeviceRequest& r : c.spec->requests)
      for (const dra::RequestSpec& s : r.alternatives) used_classes.insert(s.device_class);
  }
  if (pinned.size() > 1) {
    out.message = Unavailable(
        n_nodes, StrCat("the pod's claims are allocated on different nodes (",
                        Join(std::vector<std::string>(pinned.begin(), pinned.end()), ", "), ")"));
    return out;
  }
  std::vector<dra::DeviceClass> classes;
  for (const std::string& name : used_classes) {
    auto it = view.classes.find(name);
    if (it == view.classes.end()) continue;  // the allocator names it as not found
    auto typed = kube::DeviceClass::FromJson(it->second);
    if (!typed.ok()) {
      out.message =
          Unavailable(n_nodes, StrCat("device class ", name, ": ", typed.status().message()));
      return out;
    }
    auto cls = DeviceClassFrom(*typed);
    if (!cls.ok()) {
      out.message = Unavailable(n_nodes, std::string(cls.status().message()));
      return out;
    }
    classes.push_back(*std::move(cls));
  }

  // Fewest running pods first, then by name.
  std::map<std::string, int> pods_on;
  for (const auto& [key, p] : view.pods) {
    const std::string node = kube::StringAt(p, "/spec/nodeName"_json_pointer);
    if (!node.empty() && !PodDone(p)) ++pods_on[node];
  }
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [name, node] : view.nodes) order.emplace_back(pods_on[name], name);
  std::sort(order.begin(), order.end());

  const std::vector<TakenDevice> taken =
      needs_allocation ? TakenDevices(view) : std::vector<TakenDevice>{};
  std::map<std::string, int> reasons;
  std::optional<Attempt> closest;
  for (const auto& [count, name] : order) {
    const std::string mismatch = NodeMismatch(pod, view.nodes.at(name));
    if (!mismatch.empty()) {
      ++reasons[mismatch];
      continue;
    }
    if (!pinned.empty() && *pinned.begin() != name) {
      ++reasons[kNotAvailableOnNode];
      continue;
    }
    out.claims.clear();
    if (!needs_allocation) {
      for (const PodClaim& c : claims) out.claims.push_back({c.key, nullptr});
      out.node = name;
      return out;
    }
    std::vector<dra::DevicePool> pools;
    std::set<std::string> pool_names;
    for (const NodePool& p : view.pools.pools) {
      if (p.node != name && !p.node.empty()) continue;
      pools.push_back(p.pool);
      pool_names.insert(p.pool.pool);
    }
    auto allocator = dra::Allocator::Create(classes, std::move(pools));
    if (!allocator.ok()) {
      out.message = Unavailable(n_nodes, std::string(allocator.status().message()));
      return out;
    }
    for (const TakenDevice& t : taken) {
      if (pool_names.contains(t.pool))
        (void)(*allocator)->MarkAllocated(t.pool, t.device, t.holder);
    }
    int done = 0;
    std::optional<Attempt> failed;
    for (const PodClaim& c : claims) {
      if (!c.spec) {
        out.claims.push_back({c.key, nullptr});
        continue;
      }
      dra::Explanation why;
      auto allocation = (*allocator)->Allocate(*c.spec, &why);
      if (absl::IsInvalidArgument(allocation.status())) {
        // A bad claim or selector: no node will do better.
        out.claims.clear();
        out.message = Unavailable(
            n_nodes, StrCat("resourceclaim ", c.key, ": ", allocation.status().message()));
        return out;
      }
      if (!allocation.ok()) {
        Attempt a{name, c.key, std::move(why), done, 0};
        for (const dra::RequestReport& r : a.why.requests) a.available += r.available;
        failed = std::move(a);
        break;
      }
      out.claims.push_back({c.key, AllocationJson(c.object, *allocation, name, view)});
      ++done;
    }
    if (!failed) {
      out.node = name;
      return out;
    }
    ++reasons[kCannotAllocate];
    if (!closest || failed->Rank() > closest->Rank()) closest = std::move(failed);
  }
  out.claims.clear();
  if (n_nodes == 0) {
    out.message = "no nodes available to schedule pods";
    return out;
  }
  std::vector<std::string> counted;
  for (const auto& [reason, count] : reasons) counted.push_back(StrCat(count, " ", reason));
  std::sort(counted.begin(), counted.end());
  out.message =
      StrCat(Unavailable(n_nodes, Join(counted, ", ")), " preemption: 0/", n_nodes,
             " nodes are available: ", n_nodes, " Preemption is not helpful for scheduling.");
  if (closest) {
    std::string detail = closest->why.node.empty()
                             ? StrCat(closest->node, " publishes no devices for it")
                             : TrimNewline(closest->why.Text());
    out.message += StrCat("\nresourceclaim ", closest->claim, " cannot be allocated on ",
                          closest->node, ", the closest node:\n", detail);
  }
  for (size_t i = 0; i < view.pools.problems.size() && i < 3; ++i)
    out.message += StrCat("\nnot used: ", view.pools.problems[i]);
  return out;
}

}  // namespace canhazgpu::clusterview
