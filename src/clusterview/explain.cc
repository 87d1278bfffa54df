#include "clusterview/explain.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <variant>

#include "absl/time/time.h"
#include "cel/program.h"
#include "clusterview/claim_spec.h"
#include "clusterview/local_holds.h"
#include "clusterview/node_attempt.h"
#include "clusterview/node_fit.h"
#include "core/duration.h"
#include "core/strings.h"
#include "kube/json_object.h"
#include "kube/objects_resource.h"

namespace canhazgpu::clusterview {
namespace {

using internal::PodClaim;
using internal::TakenDevice;
using nlohmann::json;
using nlohmann::ordered_json;

// Nodes named in the summary before "and N more".
constexpr size_t kSummaryNodes = 3;
// Node names on one grouped line of the text before "and N more".
constexpr size_t kGroupNames = 6;

// "10:02 UTC" today, "2026-11-23 10:02 UTC" another day; the text itself
// when it is not RFC 3339.
std::string ShortTime(const std::string& rfc3339, TimePoint now) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) return rfc3339;
  const absl::Time n = absl::FromChrono(now);
  const absl::TimeZone utc = absl::UTCTimeZone();
  const bool today = absl::FormatTime("%Y-%m-%d", t, utc) == absl::FormatTime("%Y-%m-%d", n, utc);
  return absl::FormatTime(today ? "%H:%M UTC" : "%Y-%m-%d %H:%M UTC", t, utc);
}

// "XID 79" for our driver's health taints, "key=value:Effect" otherwise.
std::string TaintText(const std::string& taint) {
  static constexpr std::pair<const char*, const char*> kOurs[] = {
      {"gpu.canhazgpu.dev/xid=", "XID "},
      {"gpu.canhazgpu.dev/gpu-lost", "GPU lost"},
      {"gpu.canhazgpu.dev/ecc-retirement-pending", "ECC page retirement pending"},
      {"gpu.canhazgpu.dev/unmonitored", "health not monitored"}};
  for (const auto& [prefix, text] : kOurs) {
    const std::string p = prefix;
    if (taint.rfind(p, 0) != 0) continue;
    if (p.back() != '=') return text;
    const std::string value = taint.substr(p.size());
    return StrCat(text, value.substr(0, value.rfind(':')));
  }
  return taint;
}

std::string PodsText(const std::vector<std::string>& pods) {
  return StrCat("pod", pods.size() > 1 ? "s " : " ", Join(pods, ", "));
}

// "ns/claim (pod p, user bob)".
std::string HolderText(const TakenBy& t) {
  std::vector<std::string> about;
  if (!t.pods.empty()) about.push_back(PodsText(t.pods));
  if (!t.user.empty()) about.push_back(StrCat("user ", LabelledUser(t.user)));
  return about.empty() ? t.claim : StrCat(t.claim, " (", Join(about, ", "), ")");
}

bool Short(const dra::RequestReport& r) {
  if (r.wanted < 0) return r.matching == 0 || r.available < r.matching;
  return r.available < r.wanted;
}

// The selectors that rejected devices, in short.
std::string Rejecters(const dra::RequestReport& r) {
  std::vector<std::string> out;
  for (const dra::SelectorReport& s : r.selectors) {
    if (s.rejected == 0) continue;
    std::string topic = s.source == "request" ? SelectorTopic(s.expression) : s.source;
    if (s.errors > 0) topic += " (CEL errors)";
    if (std::find(out.begin(), out.end(), topic) == out.end()) out.push_back(topic);
  }
  return out.empty() ? "its selectors" : Join(out, ", ");
}

// "bob", "bob and carol", "bob, carol and 2 more".
std::string Names(const std::vector<std::string>& names) {
  if (names.size() <= 2) return Join(names, " and ");
  if (names.size() == 3) return StrCat(names[0], ", ", names[1], " and ", names[2]);
  return StrCat(names[0], ", ", names[1], " and ", names.size() - 2, " more");
}

void AddOnce(std::vector<std::string>& names, const std::string& name) {
  if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
    names.push_back(name);
}

// "gpu-0 has 6Gi of 80Gi left (alice 50Gi, bob 24Gi)" for each shared
// device of the request without room enough, its holders named by their
// users where the pods say; each user or claim also goes into `holders`.
std::vector<std::string> ShareTexts(const NodeDiagnosis& n, const dra::RequestReport& r,
                                    std::vector<std::string>& holders) {
  std::vector<std::string> out;
  for (dra::ShareReport s : r.short_of_capacity) {
    for (auto& [holder, amount] : s.holders) {
      for (const TakenBy& t : n.taken) {
        if (t.device != s.device || t.holder != holder) continue;
        holder = t.user.empty() ? t.claim : t.user;
        AddOnce(holders, t.user.empty() ? t.claim : LabelledUser(t.user));
        break;
      }
    }
    out.push_back(StrCat(s.Text(), "; needs ", dra::FormatQuantity(s.needs)));
  }
  return out;
}

// Past this many, the devices that cannot be had are counted by kind
// rather than named, so a node reads in one line.
constexpr size_t kNamedDevices = 3;

// The devices of the request that match but cannot be had now: each named
// with its holder or taint, or, when there are many and `brief`, counted
// by kind ("4 taken by claims of bob, 3 held by carol (canhazgpu)").
std::vector<std::string> Blocked(const NodeDiagnosis& n, const dra::RequestReport& r, TimePoint now,
                                 bool brief) {
  std::vector<std::string> held, claims, shared, tainted;
  std::vector<std::string> holders, held_by, kept_for, taints;  // for the counts
  int taken = 0, held_count = 0, kept_count = 0, in_use = 0;
  // Claims' devices grouped by holder, in the order first seen.
  std::vector<std::pair<std::string, std::vector<std::string>>> by_holder;
  std::vector<std::pair<std::string, std::string>> held_groups;  // devices, the rest
  for (const auto& [device, holder] : r.taken) {
    if (holder.rfind(internal::kLocalHolder, 0) == 0) {
      for (const HeldDevice& h : n.held) {
        if (h.device != device) continue;
        // "gpu-4, gpu-5 held by carol since ...": one holder, one entry.
        const std::string about = h.Text(now).substr(h.device.size());
        auto same = std::find_if(held_groups.begin(), held_groups.end(),
                                 [&](const auto& g) { return g.second == about; });
        if (same == held_groups.end()) {
          held_groups.push_back({h.device, about});
        } else {
          same->first += StrCat(", ", h.device);
        }
        if (h.state == "Held") {
          ++held_count;
          AddOnce(held_by, h.user.empty() ? "someone" : h.user);
        } else if (h.state == "Kept") {
          ++kept_count;
          AddOnce(kept_for, h.user.empty() ? "someone" : h.user);
        } else {
          ++in_use;
        }
      }
      continue;
    }
    ++taken;
    std::string text = holder;
    for (const TakenBy& t : n.taken) {
      if (t.device != device) continue;
      text = HolderText(t);
      AddOnce(holders, t.user.empty() ? t.claim : LabelledUser(t.user));
    }
    auto it = std::find_if(by_holder.begin(), by_holder.end(),
                           [&](const auto& e) { return e.first == text; });
    if (it == by_holder.end()) it = by_holder.insert(by_holder.end(), {text, {}});
    it->second.push_back(device);
  }
  for (const auto& [holder, devices] : by_holder)
    claims.push_back(StrCat(Join(devices, ", "), " taken by ", holder));
  for (const auto& [devices, about] : held_groups) held.push_back(devices + about);
  for (const std::string& d : r.counter_blocked)
    shared.push_back(StrCat(d, " shares its GPU with a taken device"));
  std::vector<std::string> shares = ShareTexts(n, r, holders);
  for (const auto& [device, taint] : r.tainted) {
    tainted.push_back(StrCat(device, " tainted: ", TaintText(taint)));
    AddOnce(taints, TaintText(taint));
  }
  const size_t named = r.taken.size() + shared.size() + tainted.size() + shares.size();
  std::vector<std::string> out;
  if (!brief || named <= kNamedDevices) {
    for (const auto* part : {&claims, &shares, &held, &shared, &tainted})
      out.insert(out.end(), part->begin(), part->end());
    return out;
  }
  if (taken > 0) out.push_back(StrCat(taken, " taken by claims of ", Names(holders)));
  if (held_count > 0)
    out.push_back(StrCat(held_count, " held by ", Names(held_by), " (canhazgpu)"));
  if (kept_count > 0) {
    out.push_back(StrCat(kept_count, " kept for ", Names(kept_for), " (canhazgpu queue)"));
  }
  if (in_use > 0) out.push_back(StrCat(in_use, " in use outside any reservation"));
  if (!shared.empty()) out.push_back(StrCat(shared.size(), " share a GPU with a taken device"));
  if (!shares.empty()) {
    out.push_back(StrCat(shares.size(), " shared with too little left, by ", Names(holders)));
  }
  if (!tainted.empty()) out.push_back(StrCat(tainted.size(), " tainted: ", Names(taints)));
  return out;
}

// What the node lacks, in a phrase after its name; `brief` counts the
// devices that cannot be had by kind when there are many.
std::string Phrase(const NodeDiagnosis& n, bool several_claims, bool several_requests,
                   TimePoint now, bool brief) {
  if (!n.unsuitable.empty()) return n.unsuitable;
  if (n.fits) return "has room now (the scheduler has not placed it yet)";
  const std::string claim = several_claims ? StrCat("resourceclaim ", n.claim, ": ") : "";
  std::vector<std::string> unchecked;
  for (const HeldDevice& h : n.held)
    if (!h.checked) unchecked.push_back(h.Text(now));
  const std::string also =
      unchecked.empty() ? "" : StrCat("; not published, so not checked: ", Join(unchecked, ", "));
  if (!n.why.error.empty()) return StrCat(claim, "cannot be evaluated: ", n.why.error, also);
  const bool no_devices = std::all_of(n.why.requests.begin(), n.why.requests.end(),
                                      [](const dra::RequestReport& r) { return r.devices == 0; });
  if (n.why.node.empty() || no_devices) return StrCat(claim, "publishes no devices", also);
  for (const dra::RequestReport& r : n.why.requests) {
    if (!Short(r)) continue;
    const std::string req = several_requests ? StrCat("request ", r.request, ": ") : "";
    if (r.matching == 0) return StrCat(claim, req, "has none matching ", Rejecters(r), also);
    std::vector<std::string> blocked = Blocked(n, r, now, brief);
    std::string count = r.available == 0 ? "none free" : std::to_string(r.available);
    if (n.why.never) count = StrCat("only ", r.matching, " matching");
    return StrCat(claim, req, "has ", count, blocked.empty() ? "" : " (", Join(blocked, ", "),
                  blocked.empty() ? "" : ")", also);
  }
  if (!n.why.unmet_constraints.empty()) {
    return StrCat(claim, "has enough free devices, but no set of them meets ",
                  Join(n.why.unmet_constraints, " and "), also);
  }
  if (n.why.search_limit) return StrCat(claim, "too many combinations to search", also);
  return StrCat(claim, "cannot allocate it", also);
}

// How close a node came, for the order: fits; tried before unsuitable;
// more claims allocated; could fit later; more devices free.
auto Rank(const NodeDiagnosis& n, int claims_done) {
  int available = 0;
  for (const dra::RequestReport& r : n.why.requests) available += r.available;
  return std::make_tuple(n.fits, n.unsuitable.empty(), claims_done, !n.why.never, available);
}

// "is cordoned" for NodeMismatch's "node(s) were unschedulable".
std::string NodeReason(const std::string& mismatch) {
  static constexpr std::pair<const char*, const char*> kWords[] = {
      {"node(s) were unschedulable", "is cordoned (unschedulable)"},
      {"node(s) had untolerated taint ", "has the taint the pod does not tolerate: "},
      {"node(s) didn't match Pod's node affinity/selector",
       "does not match the pod's nodeSelector"}};
  for (const auto& [from, to] : kWords) {
    const std::string f = from;
    if (mismatch.rfind(f, 0) == 0) return StrCat(to, mismatch.substr(f.size()));
  }
  return mismatch;
}

std::vector<std::string> ResultDevices(const json& claim, const std::string& node) {
  std::vector<std::string> out;
  for (const json& r :
       claim.value("/status/allocation/devices/results"_json_pointer, json::array())) {
    const std::string pool = r.value("pool", "");
    const std::string device = r.value("device", "");
    out.push_back(pool == node || pool.empty() ? device : StrCat(pool, "/", device));
  }
  return out;
}

std::vector<std::string> Asks(const std::vector<PodClaim>& claims) {
  std::vector<std::string> out;
  for (const PodClaim& c : claims) {
    for (const json& r : c.object.value("/spec/devices/requests"_json_pointer, json::array())) {
      out.push_back(
          StrCat("resourceclaim ", c.key, ": ", r.value("name", ""), ": ", DescribeRequest(r)));
    }
  }
  return out;
}

// A request of a claim as the asks describe it ("2 x gpu.canhazgpu.dev").
std::string Describe(const std::vector<PodClaim>& claims, const std::string& key,
                     const std::string& request) {
  const std::string base = request.substr(0, request.find('/'));
  for (const PodClaim& c : claims) {
    if (c.key != key) continue;
    for (const json& r : c.object.value("/spec/devices/requests"_json_pointer, json::array()))
      if (r.value("name", "") == base) return DescribeRequest(r);
  }
  return "";
}

// The nodes' phrases, grouped, for the summary: "node-a has 1 (...), node-b
// and node-c have none matching productName, and 7 more nodes".
std::string NodesInShort(const std::vector<NodeDiagnosis>& nodes) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const NodeDiagnosis& n : nodes) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == n.brief; });
    if (it == groups.end()) it = groups.insert(groups.end(), {n.brief, {}});
    it->second.push_back(n.node);
  }
  std::vector<std::string> parts;
  size_t shown = 0;
  for (size_t i = 0; i < groups.size() && i < kSummaryNodes; ++i) {
    const auto& [phrase, names] = groups[i];
    std::string who = names[0];
    if (names.size() == 2) who = StrCat(names[0], " and ", names[1]);
    if (names.size() > 2) who = StrCat(names.size(), " nodes (", names[0], ", ...)");
    std::string p = phrase;
    if (names.size() > 1 && p.rfind("has ", 0) == 0) p = StrCat("have ", p.substr(4));
    if (names.size() > 1 && p.rfind("is ", 0) == 0) p = StrCat("are ", p.substr(3));
    parts.push_back(StrCat(who, " ", p));
    shown += names.size();
  }
  std::string out = Join(parts, ", ");
  if (shown < nodes.size()) out += StrCat(", and ", nodes.size() - shown, " more nodes");
  return out;
}

// Whether the node's NodeGpuStatus says a device is free that its slices
// do not publish: the driver withdrew it for a local user a moment ago and
// the status (written at most once a second) does not show the hold yet.
// Until it does, the device's state is unknown, so it does not make a
// request one that can never be met.
bool UnpublishedFreeDevice(const View& view, const std::string& node) {
  auto status = view.node_gpu_statuses.find(node);
  if (status == view.node_gpu_statuses.end()) return false;
  std::set<std::string> published;
  for (const NodePool& p : view.pools.pools) {
    if (p.node != node || p.pool.driver != dra::kDriverName) continue;
    for (const dra::Device& d : p.pool.devices) published.insert(d.name);
  }
  for (const kube::NodeGpuDevice& d : status->second.status.devices) {
    if (d.state == "Free" && !published.contains(d.name)) return true;
  }
  return false;
}

// Whether the claims fit on some node they may be pinned to when every
// device is free and untainted, or whether that cannot be known (a held
// device not checked, a free device not published).
bool FitsWhenAllFree(const View& view, const std::vector<PodClaim>& claims,
                     const std::vector<dra::DeviceClass>& cls,
                     const std::set<std::string>& pinned) {
  for (const auto& [name, node] : view.nodes) {
    if (!pinned.empty() && *pinned.begin() != name) continue;
    std::vector<dra::DevicePool> pools = internal::PoolsOf(view, name);
    std::vector<HeldDevice> held = internal::HeldDevices(view, name);
    internal::PutBackHeld(view, name, pools, held, nullptr);
    // A taint goes when its cause does (an XID is cleared by a reset).
    for (dra::DevicePool& p : pools)
      for (dra::Device& device : p.devices) device.taints.clear();
    const bool unchecked =
        std::any_of(held.begin(), held.end(), [](const HeldDevice& h) { return !h.checked; });
    if (unchecked || UnpublishedFreeDevice(view, name) ||
        internal::AttemptNode(view, name, claims, cls, std::move(pools), {}, false).fits) {
      return true;
    }
  }
  return false;
}

std::string GroupNames(const std::vector<std::string>& names);

// The one-line summary once every node was tried.
std::string DiagnosisSummary(const View& view, const Diagnosis& d,
                             const std::vector<PodClaim>& claims, bool some_fit, int to_allocate) {
  if (view.nodes.empty()) return "the cluster has no nodes";
  if (some_fit) {
    // Every node it fits on, by name: the scheduler may pick any of them, so
    // naming the best-ranked one alone reads as a promise (issue 33).
    std::vector<std::string> fits;
    for (const NodeDiagnosis& n : d.nodes)
      if (n.fits) fits.push_back(n.node);
    std::sort(fits.begin(), fits.end());
    return StrCat("fits on ", GroupNames(fits), " now; the scheduler has not placed it yet");
  }
  const NodeDiagnosis& closest = d.nodes[0];
  std::string what;
  if (closest.unsuitable.empty() && !closest.why.error.empty()) {
    what = StrCat("resourceclaim ", closest.claim, " cannot be allocated");
  } else if (closest.unsuitable.empty()) {
    std::string request;
    for (const dra::RequestReport& r : closest.why.requests)
      if (Short(r) && request.empty()) request = r.request;
    if (request.empty() && !closest.why.requests.empty()) request = closest.why.requests[0].request;
    const std::string described = Describe(claims, closest.claim, request);
    what = StrCat("no node can allocate ", to_allocate > 1 ? StrCat(closest.claim, " ") : "",
                  "request ", request, described.empty() ? "" : StrCat(" (", described, ")"));
    if (d.never) what += " even with every device free";
  } else {
    what = "no node can take it";
  }
  return StrCat(d.never ? "can never run: " : "", what, ": ", NodesInShort(d.nodes));
}

// Tries the claims on `n.node`, with the devices others hold there taken;
// fills in `n` and returns how many claims were allocated.
int AttemptOnNode(const View& view, const std::vector<PodClaim>& claims,
                  const std::vector<dra::DeviceClass>& cls,
                  const std::map<std::string, std::vector<TakenDevice>>& by_pool,
                  const std::map<std::string, const TakenDevice*>& by_device, NodeDiagnosis& n,
                  Diagnosis& d) {
  std::vector<dra::DevicePool> pools = internal::PoolsOf(view, n.node);
  // Only the devices of this node's pools: 100 nodes must not each
  // look at every claim of the cluster.
  std::vector<TakenDevice> node_taken;
  for (const dra::DevicePool& p : pools) {
    auto it = by_pool.find(p.pool);
    if (it != by_pool.end())
      node_taken.insert(node_taken.end(), it->second.begin(), it->second.end());
  }
  internal::PutBackHeld(view, n.node, pools, n.held, &node_taken);
  internal::NodeAttempt a =
      internal::AttemptNode(view, n.node, claims, cls, std::move(pools), node_taken, false);
  n.fits = a.fits;
  n.claim = a.claim;
  n.why = std::move(a.why);
  // The status says what kind of error ("CEL runtime error: ...").
  if (absl::IsInvalidArgument(a.status)) n.why.error = std::string(a.status.message());
  for (const dra::RequestReport& r : n.why.requests) {
    for (const auto& [device, holder] : r.taken) {
      auto it = by_device.find(StrCat(n.why.node, "/", device));
      if (it == by_device.end()) continue;
      const TakenDevice& t = *it->second;
      n.taken.push_back({device, t.claim, t.pods, t.user, t.holder});
      d.devices_taken = true;
    }
    // The holders of the shares of a GPU without room enough.
    for (const dra::ShareReport& s : r.short_of_capacity) {
      for (const TakenDevice& t : node_taken) {
        if (t.device != s.device || t.share_id.empty()) continue;
        n.taken.push_back({s.device, t.claim, t.pods, t.user, t.holder});
        d.devices_taken = true;
      }
    }
    d.devices_taken |= std::any_of(r.taken.begin(), r.taken.end(), [](const auto& t) {
      return t.second.rfind(internal::kLocalHolder, 0) == 0;
    });
  }
  return a.claims_done;
}

// Everything that needs no claim object: the nodes tried, never, summary.
void Diagnose(const View& view, const json* pod, const std::vector<PodClaim>& claims, TimePoint now,
              Diagnosis& d) {
  d.asks = Asks(claims);
  d.problems = view.pools.problems;
  std::set<std::string> pinned;
  int to_allocate = 0;
  std::map<std::string, int> requests_of;
  for (const PodClaim& c : claims) {
    if (!c.spec) {
      if (const std::string n = internal::AllocatedNode(c.object); !n.empty()) pinned.insert(n);
      continue;
    }
    ++to_allocate;
    requests_of[c.key] = static_cast<int>(c.spec->requests.size());
  }
  if (pinned.size() > 1) {
    d.summary = StrCat("can never run: its claims are allocated on different nodes (",
                       Join(std::vector<std::string>(pinned.begin(), pinned.end()), ", "),
                       "), so no node can run it");
    d.never = true;
    return;
  }
  auto classes = internal::ClassesFor(view, claims);
  if (auto* why = std::get_if<std::string>(&classes)) {
    d.summary = *why;
    return;
  }
  const auto& cls = std::get<std::vector<dra::DeviceClass>>(classes);
  const std::vector<TakenDevice> taken = internal::TakenDevices(view);
  std::map<std::string, const TakenDevice*> by_device;  // "pool/device"
  std::map<std::string, std::vector<TakenDevice>> by_pool;
  for (const TakenDevice& t : taken) {
    by_device[StrCat(t.pool, "/", t.device)] = &t;
    by_pool[t.pool].push_back(t);
  }

  std::vector<std::pair<NodeDiagnosis, int>> tried;  // with claims allocated
  bool some_fit = false;
  for (const auto& [name, node] : view.nodes) {
    NodeDiagnosis n;
    n.node = name;
    n.held = internal::HeldDevices(view, name);
    if (pod != nullptr) n.unsuitable = NodeReason(NodeMismatch(*pod, node));
    if (n.unsuitable.empty() && !pinned.empty() && *pinned.begin() != name)
      n.unsuitable = StrCat("is not where its claims are allocated (", *pinned.begin(), ")");
    int done = 0;
    if (n.unsuitable.empty() && to_allocate == 0) {
      n.fits = true;
    } else if (n.unsuitable.empty()) {
      done = AttemptOnNode(view, claims, cls, by_pool, by_device, n, d);
    }
    some_fit |= n.fits;
    tried.emplace_back(std::move(n), done);
  }
  std::stable_sort(tried.begin(), tried.end(), [](const auto& a, const auto& b) {
    return Rank(a.first, a.second) > Rank(b.first, b.second);
  });
  const bool several_requests = std::any_of(requests_of.begin(), requests_of.end(),
                                            [](const auto& r) { return r.second > 1; });
  for (auto& [n, done] : tried) {
    n.phrase = Phrase(n, to_allocate > 1, several_requests, now, /*brief=*/false);
    n.brief = Phrase(n, to_allocate > 1, several_requests, now, /*brief=*/true);
    d.nodes.push_back(std::move(n));
  }

  // Never: not even with every device free, on any node it may be pinned to.
  if (!some_fit && to_allocate > 0 && !view.nodes.empty())
    d.never = !FitsWhenAllFree(view, claims, cls, pinned);

  d.summary = DiagnosisSummary(view, d, claims, some_fit, to_allocate);
}

std::string GroupNames(const std::vector<std::string>& names) {
  if (names.size() <= kGroupNames) return Join(names, ", ");
  std::vector<std::string> first(names.begin(), names.begin() + kGroupNames);
  return StrCat(Join(first, ", "), " and ", names.size() - kGroupNames, " more");
}

// The allocator's detail under a node line: per request the counts and
// what each selector rejected (with CEL errors), the unmet constraints.
std::string Detail(const NodeDiagnosis& n) {
  std::string out;
  if (!n.unsuitable.empty() || n.fits || n.why.node.empty() || !n.why.error.empty()) return out;
  for (const dra::RequestReport& r : n.why.requests) {
    out += StrCat("    request ", r.request, ": wants ",
                  r.wanted < 0 ? std::string("all matching") : std::to_string(r.wanted), "; ",
                  r.matching, " of ", r.devices, " devices match, ", r.available, " free\n");
    for (const dra::SelectorReport& s : r.selectors) {
      if (s.rejected == 0) continue;
      out += StrCat("      ", s.source, " selector rejected ", s.rejected, ": ",
                    cel::Excerpt(s.expression, 0, 120), "\n");
      if (s.errors > 0)
        out += StrCat("        ", s.errors, " CEL error(s), first: ", s.first_error, "\n");
    }
  }
  for (const std::string& c : n.why.unmet_constraints)
    out += StrCat("    constraint ", c, " could not be met\n");
  return out;
}

Diagnosis Scheduled(Diagnosis d, const std::string& node, std::vector<std::string> devices,
                    const std::string& verb) {
  d.pending = false;
  d.node = node;
  d.devices = std::move(devices);
  d.summary = StrCat(verb, " ", node.empty() ? "any node" : node,
                     d.devices.empty() ? "" : StrCat(" with ", Join(d.devices, ", ")));
  return d;
}

}  // namespace

std::string HeldDevice::Text(TimePoint now) const {
  if (state == "InUse") {
    return users.empty() ? StrCat(device, " in use outside any reservation")
                         : StrCat(device, " in use outside any reservation by ", Join(users, ", "));
  }
  if (state == "Kept") {
    std::string out = StrCat(device, " kept for ", user.empty() ? "someone" : user);
    if (!since.empty()) out += StrCat(", waiting since ", ShortTime(since, now));
    return out + " (canhazgpu queue)";
  }
  std::string out = StrCat(device, " held by ", user.empty() ? "someone" : user);
  if (!since.empty()) out += StrCat(" since ", ShortTime(since, now));
  if (!until.empty()) out += StrCat(" until ", ShortTime(until, now));
  return out + " (canhazgpu)";
}

std::string Diagnosis::Text() const {
  std::string out = StrCat(object, pending ? " is pending" : "", ": ", summary, "\n");
  if (!note.empty()) out += StrCat("note: ", note, "\n");
  if (!asks.empty()) {
    out += "asks for:\n";
    for (const std::string& a : asks) out += StrCat("  ", a, "\n");
  }
  if (pending && !nodes.empty()) {
    out += "nodes, closest first:\n";
    std::vector<std::pair<const NodeDiagnosis*, std::vector<std::string>>> groups;
    for (const NodeDiagnosis& n : nodes) {
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const auto& g) { return g.first->brief == n.brief; });
      if (it == groups.end()) it = groups.insert(groups.end(), {&n, {}});
      it->second.push_back(n.node);
    }
    // A node alone on its line is said in full; a group in brief, with its
    // closest node in full beneath.
    for (const auto& [n, names] : groups) {
      if (names.size() == 1) {
        out += StrCat("  ", n->node, ": ", n->phrase, "\n", Detail(*n));
        continue;
      }
      out += StrCat("  ", GroupNames(names), ": ", n->brief, "\n");
      if (n->phrase != n->brief) out += StrCat("    ", n->node, ": ", n->phrase, "\n");
      out += Detail(*n);
    }
  }
  if (pending && devices_taken) out += StrCat(kNoPreemption, "\n");
  for (const std::string& p : problems) out += StrCat("not used: ", p, "\n");
  return out;
}

ordered_json Diagnosis::Json() const {
  ordered_json node_list = ordered_json::array();
  for (const NodeDiagnosis& n : nodes) {
    ordered_json taken_json = ordered_json::array();
    for (const TakenBy& t : n.taken) {
      taken_json.push_back(
          {{"device", t.device}, {"claim", t.claim}, {"pods", t.pods}, {"user", t.user}});
    }
    ordered_json held_json = ordered_json::array();
    for (const HeldDevice& h : n.held) {
      held_json.push_back({{"device", h.device},
                           {"state", h.state},
                           {"user", h.user},
                           {"kind", h.kind},
                           {"since", h.since},
                           {"until", h.until},
                           {"users", h.users},
                           {"checked", h.checked}});
    }
    const bool tried = n.unsuitable.empty() && !n.fits;
    node_list.push_back({{"node", n.node},
                         {"unsuitable", n.unsuitable},
                         {"fits", n.fits},
                         {"claim", n.claim},
                         {"phrase", n.phrase},
                         {"brief", n.brief},
                         {"taken", taken_json},
                         {"held", held_json},
                         {"allocator", tried ? n.why.Json() : ordered_json()}});
  }
  return {{"object", object},
          {"note", note},
          {"pending", pending},
          {"never", never},
          {"summary", summary},
          {"node", node},
          {"devices", devices},
          {"asks", asks},
          {"preemption", pending && devices_taken ? kNoPreemption : ""},
          {"nodes", node_list},
          {"problems", problems}};
}

Diagnosis ExplainPod(const View& view, const json& pod, TimePoint now) {
  Diagnosis d;
  d.object = StrCat("pod ", KeyOf(pod));
  d.note = NoteOf(pod);
  const std::string node = kube::StringAt(pod, "/spec/nodeName"_json_pointer);
  if (!node.empty()) {
    std::vector<std::string> devices;
    const std::string ns = kube::StringAt(pod, "/metadata/namespace"_json_pointer);
    for (const auto& [entry, name] : PodClaimNames(pod)) {
      auto it = view.claims.find(StrCat(ns, "/", name));
      if (it == view.claims.end()) continue;
      for (std::string& dev : ResultDevices(it->second, node)) devices.push_back(std::move(dev));
    }
    const std::string phase = kube::StringAt(pod, "/status/phase"_json_pointer);
    const std::string verb =
        internal::PodDone(pod) ? StrCat("finished (", phase, ") on") : "runs on";
    return Scheduled(std::move(d), node, std::move(devices), verb);
  }
  auto resolved = internal::ResolveClaims(view, pod, /*templates=*/true);
  if (auto* why = std::get_if<std::string>(&resolved)) {
    d.summary = *why;
    return d;
  }
  if (std::get<std::vector<PodClaim>>(resolved).empty()) {
    d.summary = "it uses no resource claims, so no device keeps it waiting";
    return d;
  }
  Diagnose(view, &pod, std::get<std::vector<PodClaim>>(resolved), now, d);
  return d;
}

Diagnosis ExplainClaim(const View& view, const json& claim, TimePoint now) {
  Diagnosis d;
  const std::string key = KeyOf(claim);
  d.object = StrCat("resourceclaim ", key);
  if (internal::Allocated(claim)) {
    const std::string node = internal::AllocatedNode(claim);
    std::vector<std::string> pods;
    for (const json& r : claim.value("/status/reservedFor"_json_pointer, json::array()))
      if (r.value("resource", "") == "pods") pods.push_back(r.value("name", ""));
    d = Scheduled(std::move(d), node, ResultDevices(claim, node), "allocated on");
    d.summary += pods.empty() ? ", not in use by any pod yet" : StrCat(", for ", PodsText(pods));
    return d;
  }
  PodClaim c{key, claim, std::nullopt};
  auto typed = kube::ResourceClaim::FromJson(claim);
  if (!typed.ok()) {
    d.summary = StrCat("resourceclaim ", key, ": ", typed.status().message());
    return d;
  }
  auto spec = ClaimFromSpec(typed->spec, key);
  if (!spec.ok()) {
    d.summary = StrCat("can never run: resourceclaim ", key, ": ", spec.status().message());
    d.never = true;
    return d;
  }
  c.spec = *std::move(spec);
  Diagnose(view, nullptr, {std::move(c)}, now, d);
  return d;
}

absl::StatusOr<Diagnosis> ExplainClaimSpec(const View& view, const json& claim_spec,
                                           const std::string& ns, TimePoint now) {
  const std::string key = StrCat(ns, "/(new claim)");
  auto typed = kube::ResourceClaimSpec::FromJson(claim_spec);
  if (!typed.ok()) return absl::InvalidArgumentError(StrCat("claim: ", typed.status().message()));
  auto spec = ClaimFromSpec(*typed, key);
  if (!spec.ok()) return absl::InvalidArgumentError(StrCat("claim: ", spec.status().message()));
  Diagnosis d;
  d.object = "the new claim";
  for (const dra::DeviceRequest& r : spec->requests) {
    for (const dra::RequestSpec& s : r.alternatives) {
      if (view.classes.contains(s.device_class)) continue;
      d.never = true;
      d.summary = StrCat("can never run: device class '", s.device_class,
                         "' does not exist in the cluster");
      return d;
    }
  }
  // Selectors compile before any device is looked at: an allocator without
  // devices reports only what is wrong with the claim itself.
  PodClaim probe{key, json::object(), *spec};
  auto classes = internal::ClassesFor(view, {probe});
  if (auto* why = std::get_if<std::string>(&classes)) return absl::FailedPreconditionError(*why);
  auto allocator = dra::Allocator::Create(std::get<std::vector<dra::DeviceClass>>(classes), {});
  if (!allocator.ok()) return absl::FailedPreconditionError(allocator.status().message());
  auto tried = (*allocator)->Allocate(*spec);
  if (absl::IsInvalidArgument(tried.status()))
    return absl::InvalidArgumentError(StrCat("claim: ", tried.status().message()));
  json object = {{"metadata", {{"namespace", ns}, {"name", "(new claim)"}}}, {"spec", claim_spec}};
  Diagnose(view, nullptr, {PodClaim{key, std::move(object), *std::move(spec)}}, now, d);
  return d;
}

}  // namespace canhazgpu::clusterview
