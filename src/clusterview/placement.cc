#include "clusterview/placement.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <variant>

#include "clusterview/node_attempt.h"
#include "clusterview/node_fit.h"
#include "clusterview/pod_affinity.h"
#include "core/strings.h"
#include "kube/json_object.h"
#include "kube/objects_resource.h"

namespace canhazgpu::clusterview {
namespace {

using internal::AllocatedNode;
using internal::AttemptNode;
using internal::ClassesFor;
using internal::NodeAttempt;
using internal::PodClaim;
using internal::PodDone;
using internal::PoolsOf;
using internal::ResolveClaims;
using internal::TakenDevice;
using internal::TakenDevices;
using nlohmann::json;

// The DynamicResources plugin's reasons (kube-scheduler 1.34).
constexpr char kCannotAllocate[] = "cannot allocate all claims";
constexpr char kNotAvailableOnNode[] = "resourceclaim not available on the node";

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

// Claims allocated before pin the pod to their node.
std::set<std::string> PinnedNodes(const std::vector<PodClaim>& claims) {
  std::set<std::string> pinned;
  for (const PodClaim& c : claims) {
    if (c.spec) continue;
    const std::string node = AllocatedNode(c.object);
    if (!node.empty()) pinned.insert(node);
  }
  return pinned;
}

// The nodes to try, fewest running pods first, then by name.
std::vector<std::string> NodesByLoad(const View& view) {
  std::map<std::string, int> pods_on;
  for (const auto& [key, p] : view.pods) {
    const std::string node = kube::StringAt(p, "/spec/nodeName"_json_pointer);
    if (!node.empty() && !PodDone(p)) ++pods_on[node];
  }
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [name, node] : view.nodes) order.emplace_back(pods_on[name], name);
  std::sort(order.begin(), order.end());
  std::vector<std::string> names;
  for (auto& [count, name] : order) names.push_back(std::move(name));
  return names;
}

// Why no node fits, in the scheduler's words, with the closest node's
// reason below.
std::string NoNodeFitsMessage(const View& view, const std::map<std::string, int>& reasons,
                              const std::optional<Attempt>& closest) {
  const size_t n_nodes = view.nodes.size();
  std::vector<std::string> counted;
  for (const auto& [reason, count] : reasons) counted.push_back(StrCat(count, " ", reason));
  std::sort(counted.begin(), counted.end());
  std::string message =
      StrCat(Unavailable(n_nodes, Join(counted, ", ")), " preemption: 0/", n_nodes,
             " nodes are available: ", n_nodes, " Preemption is not helpful for scheduling.");
  if (closest) {
    std::string detail = closest->why.node.empty()
                             ? StrCat(closest->node, " publishes no devices for it")
                             : TrimNewline(closest->why.Text());
    message += StrCat("\nresourceclaim ", closest->claim, " cannot be allocated on ", closest->node,
                      ", the closest node:\n", detail);
  }
  for (size_t i = 0; i < view.pools.problems.size() && i < 3; ++i)
    message += StrCat("\nnot used: ", view.pools.problems[i]);
  return message;
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
    if (!d.share_id.empty()) {
      r["shareID"] = d.share_id;
      json consumed = json::object();
      for (const auto& [name, amount] : d.consumed_capacity)
        consumed[name] = dra::FormatQuantity(amount);
      r["consumedCapacity"] = consumed;
    }
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

  const std::set<std::string> pinned = PinnedNodes(claims);
  const bool needs_allocation = std::any_of(
      claims.begin(), claims.end(), [](const PodClaim& c) { return static_cast<bool>(c.spec); });
  if (pinned.size() > 1) {
    out.message = Unavailable(
        n_nodes, StrCat("the pod's claims are allocated on different nodes (",
                        Join(std::vector<std::string>(pinned.begin(), pinned.end()), ", "), ")"));
    return out;
  }
  auto classes = ClassesFor(view, claims);
  if (auto* why = std::get_if<std::string>(&classes)) {
    out.message = Unavailable(n_nodes, *why);
    return out;
  }

  const std::vector<TakenDevice> taken =
      needs_allocation ? TakenDevices(view) : std::vector<TakenDevice>{};
  std::map<std::string, int> reasons;
  std::optional<Attempt> closest;
  for (const std::string& name : NodesByLoad(view)) {
    std::string mismatch = NodeMismatch(pod, view.nodes.at(name));
    if (mismatch.empty()) mismatch = PodAntiAffinityMismatch(view, pod, name);
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
    NodeAttempt attempt =
        AttemptNode(view, name, claims, std::get<std::vector<dra::DeviceClass>>(classes),
                    PoolsOf(view, name), taken, /*plans=*/true);
    if (attempt.fits) {
      out.claims = std::move(attempt.plans);
      out.node = name;
      return out;
    }
    if (attempt.claim.empty()) {  // the classes do not compile
      out.message = Unavailable(n_nodes, std::string(attempt.status.message()));
      return out;
    }
    if (absl::IsInvalidArgument(attempt.status)) {
      // A bad claim or selector: no node will do better.
      out.message = Unavailable(
          n_nodes, StrCat("resourceclaim ", attempt.claim, ": ", attempt.status.message()));
      return out;
    }
    Attempt failed{name, attempt.claim, std::move(attempt.why), attempt.claims_done, 0};
    for (const dra::RequestReport& r : failed.why.requests) failed.available += r.available;
    ++reasons[kCannotAllocate];
    if (!closest || failed.Rank() > closest->Rank()) closest = std::move(failed);
  }
  out.claims.clear();
  if (n_nodes == 0) {
    out.message = "no nodes available to schedule pods";
    return out;
  }
  out.message = NoNodeFitsMessage(view, reasons, closest);
  return out;
}

}  // namespace canhazgpu::clusterview
