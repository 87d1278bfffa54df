#include "clusterview/gpu_status.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/time/time.h"
#include "clusterview/gang_view.h"
#include "core/duration.h"
#include "core/quantity.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "dra/devices.h"
#include "kube/json_object.h"
#include "kube/objects_gpu_status.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// node, driver, device
using DeviceKey = std::tuple<std::string, std::string, std::string>;

std::optional<TimePoint> ParseTime(const std::string& text) {
  absl::Time t;
  std::string why;
  if (text.empty() || !absl::ParseTime(absl::RFC3339_full, text, &t, &why)) return std::nullopt;
  return std::chrono::time_point_cast<TimePoint::duration>(absl::ToChronoTime(t));
}

using kube::StringField;

std::string TextAt(const json& j, const json::json_pointer& p) {
  return j.contains(p) && j.at(p).is_string() ? j.at(p).get<std::string>() : "";
}

const json& Items(const json& j, const char* key) {
  static const json kEmpty = json::array();
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : kEmpty;
}

std::string StringAttribute(const dra::Device& d, const std::string& driver, const char* name) {
  const dra::AttributeValue* v = dra::FindAttribute(d, driver, StrCat(driver, "/", name));
  return v != nullptr && v->kind == dra::AttributeValue::Kind::kString ? v->string_value : "";
}

int64_t Memory(const dra::Device& d, const std::string& driver) {
  for (const std::string& name : {std::string("memory"), StrCat(driver, "/memory")}) {
    if (auto it = d.capacity.find(name); it != d.capacity.end()) return it->second;
  }
  return 0;
}

bool Blocks(const std::string& effect) { return effect == "NoSchedule" || effect == "NoExecute"; }

void AddTaint(std::vector<GpuTaint>& taints, GpuTaint taint) {
  for (GpuTaint& t : taints) {
    if (t.key == taint.key && t.value == taint.value && t.effect == taint.effect) {
      if (t.reason.empty()) t.reason = taint.reason;  // the driver says it in both places
      return;
    }
  }
  taints.push_back(std::move(taint));
}

// What the node's NodeGpuStatus says of one device.
struct NodeReport {
  std::string state;  // Free, Held, Prepared, Shared, InUse
  const kube::NodeGpuDevice* device = nullptr;
};

// The devices of the node's NodeGpuStatus into `rows` (a row for a device
// the slices do not publish, the status's taints and usage) and `reports`.
void AddNodeReports(const std::string& node, const kube::NodeGpuStatus& status,
                    std::map<DeviceKey, GpuRow>& rows, std::map<DeviceKey, NodeReport>& reports) {
  for (const kube::NodeGpuDevice& d : status.status.devices) {
    if (d.name.empty()) continue;
    const DeviceKey key{node, dra::kDriverName, d.name};
    GpuRow& row = rows[key];
    if (row.device.empty()) {
      row.node = node;
      row.driver = dra::kDriverName;
      row.device = d.name;
      row.type = d.type;
      row.product = d.product_name;
    }
    for (const kube::NodeGpuTaint& t : d.taints) {
      AddTaint(row.taints, {t.key, t.value, t.effect, t.reason, "NodeGpuStatus"});
    }
    if (d.usage) {
      row.usage = DeviceUsage{.users = d.usage->users,
                              .memory_used_bytes = d.usage->memory_used_bytes.value_or(0)};
    }
    for (const kube::NodeGpuQueueKeep& k : d.kept_for) {
      row.kept_for.push_back(k.memory.empty() ? k.user : StrCat(k.user, " ", k.memory));
    }
    reports[key] = {d.state, &d};
  }
}

// The user label of the first reserved pod that has one, else the claim's.
std::string UserOf(const View& view, const json& claim, const std::vector<PodRef>& pods) {
  for (const PodRef& p : pods) {
    auto pod = view.pods.find(StrCat(p.namespace_name, "/", p.name));
    if (pod == view.pods.end()) continue;
    std::string user =
        TextAt(pod->second, json::json_pointer("/metadata/labels/canhazgpu.dev~1user"));
    if (!user.empty()) return user;
  }
  return TextAt(claim, json::json_pointer("/metadata/labels/canhazgpu.dev~1user"));
}

std::optional<TimePoint> ClaimSince(const View& view, const json& claim,
                                    const std::vector<PodRef>& pods) {
  if (auto t = ParseTime(TextAt(claim, "/status/allocation/allocationTimestamp"_json_pointer))) {
    return t;
  }
  std::optional<TimePoint> earliest;
  for (const PodRef& p : pods) {
    auto pod = view.pods.find(StrCat(p.namespace_name, "/", p.name));
    if (pod == view.pods.end()) continue;
    auto t = ParseTime(TextAt(pod->second, "/status/startTime"_json_pointer));
    if (t && (!earliest || *t < *earliest)) earliest = t;
  }
  if (earliest) return earliest;
  return ParseTime(TextAt(claim, "/metadata/creationTimestamp"_json_pointer));
}

ClaimHolder HolderOf(const View& view, const json& claim) {
  ClaimHolder h;
  h.namespace_name = TextAt(claim, "/metadata/namespace"_json_pointer);
  h.name = TextAt(claim, "/metadata/name"_json_pointer);
  if (claim.contains("status")) {
    for (const json& ref : Items(claim["status"], "reservedFor")) {
      if (StringField(ref, "resource") != "pods" || !StringField(ref, "apiGroup").empty()) continue;
      PodRef& p = h.pods.emplace_back();
      p.namespace_name = h.namespace_name;
      p.name = StringField(ref, "name");
      if (auto pod = view.pods.find(StrCat(p.namespace_name, "/", p.name));
          pod != view.pods.end()) {
        p.job = GangJobOf(pod->second);
        if (!p.job.empty()) p.rank = GangRankOf(pod->second);
      }
    }
  }
  h.user = UserOf(view, claim, h.pods);
  for (const PodRef& p : h.pods) {
    auto pod = view.pods.find(StrCat(p.namespace_name, "/", p.name));
    if (pod != view.pods.end() && !NoteOf(pod->second).empty()) {
      h.note = NoteOf(pod->second);
      break;
    }
  }
  h.since = ClaimSince(view, claim, h.pods);
  return h;
}

// The closest names to `wanted`, for "did you mean".
std::string Closest(const std::string& wanted, const std::set<std::string>& names) {
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& n : names) scored.emplace_back(EditDistance(wanted, n), n);
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : NaturalLess(a.second, b.second);
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) out.push_back(scored[i].second);
  return Join(out, ", ");
}

bool Occupied(GpuState s) {
  return s == GpuState::kClaimed || s == GpuState::kHeld || s == GpuState::kInUse;
}

// A free device whose GPU's shared counters are spent by devices that are
// not free cannot be allocated: it is Unavailable.
void MarkUnavailable(std::vector<GpuRow*>& rows, const std::vector<const dra::Device*>& devices,
                     const dra::DevicePool& pool) {
  std::map<std::string, std::map<std::string, int64_t>> used;  // set -> counter -> units
  std::map<std::string, std::vector<std::string>> users;       // set -> devices
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!Occupied(rows[i]->state) || devices[i] == nullptr) continue;
    for (const dra::CounterConsumption& c : devices[i]->consumes_counters) {
      for (const auto& [counter, units] : c.counters) used[c.counter_set][counter] += units;
      users[c.counter_set].push_back(rows[i]->device);
    }
  }
  if (used.empty()) return;
  std::map<std::string, const dra::CounterSet*> sets;
  for (const dra::CounterSet& s : pool.shared_counters) sets[s.name] = &s;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i]->state != GpuState::kFree || devices[i] == nullptr) continue;
    for (const dra::CounterConsumption& c : devices[i]->consumes_counters) {
      auto set = sets.find(c.counter_set);
      auto spent = used.find(c.counter_set);
      if (set == sets.end() || spent == used.end()) continue;
      bool fits = true;
      for (const auto& [counter, units] : c.counters) {
        auto have = set->second->counters.find(counter);
        const int64_t total = have == set->second->counters.end() ? 0 : have->second;
        if (spent->second[counter] + units > total) fits = false;
      }
      if (!fits) {
        rows[i]->state = GpuState::kUnavailable;
        for (const std::string& d : users[c.counter_set]) {
          if (std::find(rows[i]->blocked_by.begin(), rows[i]->blocked_by.end(), d) ==
              rows[i]->blocked_by.end()) {
            rows[i]->blocked_by.push_back(d);
          }
        }
      }
    }
  }
}

std::string Since(const std::optional<TimePoint>& since, TimePoint now) {
  if (!since) return "-";
  return FormatDurationShort(
      std::max(Duration(0), std::chrono::duration_cast<Duration>(now - *since)));
}

int64_t Seconds(const std::optional<TimePoint>& since, TimePoint now) {
  return std::max<int64_t>(0,
                           std::chrono::duration_cast<std::chrono::seconds>(now - *since).count());
}

}  // namespace

std::string PodRef::Text() const {
  if (job.empty()) return StrCat(namespace_name, "/", name);
  return StrCat("job ", namespace_name, "/", job, " rank ", rank);
}

const char* GpuStateName(GpuState state) {
  switch (state) {
    case GpuState::kClaimed:
      return "Claimed";
    case GpuState::kHeld:
      return "Held";
    case GpuState::kInUse:
      return "InUse";
    case GpuState::kTainted:
      return "Tainted";
    case GpuState::kUnavailable:
      return "Unavailable";
    case GpuState::kFree:
      return "Free";
  }
  return "Free";
}

std::string GpuTaint::ToString() const {
  return value.empty() ? StrCat(key, ":", effect) : StrCat(key, "=", value, ":", effect);
}

bool NaturalLess(const std::string& a, const std::string& b) {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && is_digit(a[ie])) ++ie;
      while (je < b.size() && is_digit(b[je])) ++je;
      std::string_view x(a.data() + i, ie - i), y(b.data() + j, je - j);
      while (x.size() > 1 && x[0] == '0') x.remove_prefix(1);
      while (y.size() > 1 && y[0] == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;  // "gpu-01" vs "gpu-1": some order, always the same
}

namespace {

bool WantedNode(const std::string& only, const std::string& node) {
  return only.empty() || node == only;
}

// NotFound, with the closest name, when --node names no node the view has.
absl::Status CheckNodeKnown(const View& view, const std::string& only) {
  if (only.empty()) return absl::OkStatus();
  std::set<std::string> known;
  for (const auto& [name, node] : view.nodes) known.insert(name);
  for (const NodePool& p : view.pools.pools) {
    if (!p.node.empty()) known.insert(p.node);
  }
  for (const auto& [name, status] : view.node_gpu_statuses) known.insert(name);
  if (known.contains(only)) return absl::OkStatus();
  if (known.empty()) {
    return absl::NotFoundError(StrCat("no node \"", only, "\": the cluster has no nodes"));
  }
  return absl::NotFoundError(
      StrCat("no node \"", only, "\" in the cluster; closest: ", Closest(only, known)));
}

// Every GPU and MIG device of the slices, one row each, with where it came from.
struct SliceGpus {
  std::map<DeviceKey, GpuRow> rows;
  std::map<DeviceKey, const dra::Device*> devices;
  std::map<DeviceKey, const NodePool*> pool_of;
  std::map<std::pair<std::string, std::string>, std::string> node_of_pool;  // driver, pool
};

SliceGpus CollectSliceGpus(const View& view, const std::string& only) {
  SliceGpus out;
  for (const NodePool& p : view.pools.pools) {
    if (p.node.empty()) continue;  // devices reachable from many nodes are not GPUs of one
    out.node_of_pool[{p.pool.driver, p.pool.pool}] = p.node;
    if (!WantedNode(only, p.node)) continue;
    for (const dra::Device& d : p.pool.devices) {
      const std::string type = StringAttribute(d, p.pool.driver, "type");
      if (type != "gpu" && type != "mig") continue;
      const DeviceKey key{p.node, p.pool.driver, d.name};
      GpuRow& row = out.rows[key];
      row.node = p.node;
      row.driver = p.pool.driver;
      row.device = d.name;
      row.type = type;
      row.product = StringAttribute(d, p.pool.driver, "productName");
      row.memory_bytes = Memory(d, p.pool.driver);
      row.shared = d.allow_multiple_allocations;
      for (const dra::DeviceTaint& t : d.taints) {
        AddTaint(row.taints, {t.key, t.value, t.effect, "", "ResourceSlice"});
      }
      out.devices[key] = &d;
      out.pool_of[key] = &p;
    }
  }
  return out;
}

// Each allocated claim's holder on the rows of the devices it was given.
void AddClaimHolders(const View& view, SliceGpus& gpus) {
  for (const auto& [key, claim] : view.claims) {
    const json::json_pointer results("/status/allocation/devices/results");
    if (!claim.contains(results) || !claim.at(results).is_array()) continue;
    std::optional<ClaimHolder> holder;
    for (const json& r : claim.at(results)) {
      const std::string driver = StringField(r, "driver");
      const std::string pool = StringField(r, "pool");
      auto node = gpus.node_of_pool.find({driver, pool});
      // A pool not readable now (incomplete): ours and NVIDIA's name it after the node.
      const std::string node_name = node != gpus.node_of_pool.end() ? node->second : pool;
      auto row = gpus.rows.find({node_name, driver, StringField(r, "device")});
      if (row == gpus.rows.end()) continue;  // not a GPU, or not on the node asked for
      if (!holder) holder = HolderOf(view, claim);
      ClaimHolder& h = row->second.claims.emplace_back(*holder);
      h.share_id = StringField(r, "shareID");
      const std::string memory = kube::StringAt(r, "/consumedCapacity/memory"_json_pointer);
      if (!h.share_id.empty() && !memory.empty())
        h.memory_bytes = QuantityValue(memory).value_or(0);
    }
  }
}

// The claims the node reports the device prepared for (or holding shares
// of) that the API no longer has (their unprepare is still to come): still
// the claims'. A claim the API has was allocated other devices of this GPU
// (the node counts whole GPUs), or is on the row already.
void AddReportedClaims(const View& view, const kube::NodeGpuDevice& device, GpuRow& row) {
  for (const kube::NodeGpuClaim& c : device.claims) {
    const std::string& ns = c.namespace_name;
    if (view.claims.contains(StrCat(ns, "/", c.name))) continue;
    ClaimHolder h{.namespace_name = ns, .name = c.name};
    for (const std::string& pod : c.pods) h.pods.push_back({ns, pod});
    h.share_id = c.share_id;
    if (!c.memory.empty()) h.memory_bytes = QuantityValue(c.memory).value_or(0);
    row.claims.push_back(std::move(h));
  }
}

// A row's state from its claims, then the node's own report, then taints.
void SetRowState(const View& view, const NodeReport* r, GpuRow& row) {
  if (!row.claims.empty()) {
    row.state = GpuState::kClaimed;
  } else if (r != nullptr && r->state == "Held") {
    row.state = GpuState::kHeld;
    const kube::NodeGpuHold held = r->device->held.value_or(kube::NodeGpuHold{});
    row.held = LocalHold{.user = held.user,
                         .kind = held.kind,
                         .since = ParseTime(held.since),
                         .until = ParseTime(held.until)};
  } else if (r != nullptr && r->state == "InUse") {
    row.state = GpuState::kInUse;
    if (!row.usage) row.usage = DeviceUsage{};
  } else if (r != nullptr && (r->state == "Prepared" || r->state == "Shared")) {
    AddReportedClaims(view, *r->device, row);
    if (!row.claims.empty()) {
      row.state = GpuState::kClaimed;
    } else if (r->device->sharing && !r->device->sharing->local_shares.empty()) {
      // Shared by local users alone: held by them, as before shares.
      const kube::NodeGpuLocalShare& first = r->device->sharing->local_shares.front();
      row.state = GpuState::kHeld;
      row.held = LocalHold{.user = first.user,
                           .kind = first.kind,
                           .since = ParseTime(first.since),
                           .until = ParseTime(first.until)};
    }
  }
  // Kept whole for a local waiter: the node withdrew it, as for a hold.
  if (row.state == GpuState::kFree && r != nullptr) {
    for (const kube::NodeGpuQueueKeep& k : r->device->kept_for) {
      if (!k.memory.empty()) continue;
      row.state = GpuState::kHeld;
      row.held = LocalHold{.user = k.user, .kind = kQueuedHold, .since = ParseTime(k.since)};
      break;
    }
  }
  if (row.state == GpuState::kFree &&
      std::any_of(row.taints.begin(), row.taints.end(),
                  [](const GpuTaint& t) { return Blocks(t.effect); })) {
    row.state = GpuState::kTainted;
  }
}

// MarkUnavailable, pool by pool.
void MarkSharedCountersUnavailable(SliceGpus& gpus) {
  std::map<const NodePool*, std::pair<std::vector<GpuRow*>, std::vector<const dra::Device*>>>
      by_pool;
  for (auto& [key, row] : gpus.rows) {
    auto pool = gpus.pool_of.find(key);
    if (pool == gpus.pool_of.end()) continue;
    by_pool[pool->second].first.push_back(&row);
    by_pool[pool->second].second.push_back(gpus.devices[key]);
  }
  for (auto& [pool, members] : by_pool) MarkUnavailable(members.first, members.second, pool->pool);
}

void CountState(GpuState state, DeviceCounts& s) {
  ++s.total;
  switch (state) {
    case GpuState::kClaimed:
      ++s.claimed;
      break;
    case GpuState::kHeld:
      ++s.held;
      break;
    case GpuState::kInUse:
      ++s.in_use;
      break;
    case GpuState::kTainted:
      ++s.tainted;
      break;
    case GpuState::kUnavailable:
      ++s.unavailable;
      break;
    case GpuState::kFree:
      ++s.free;
      break;
  }
}

// One summary per node: the node asked for, every reporting node, and
// every node a row is on; in natural order.
std::vector<NodeSummary> SummarizeNodes(const View& view, const std::string& only,
                                        const std::vector<GpuRow>& rows) {
  std::map<std::string, NodeSummary> summaries;
  if (!only.empty()) summaries[only].node = only;
  for (const auto& [node, status] : view.node_gpu_statuses) {
    if (!WantedNode(only, node)) continue;
    summaries[node].node = node;
    summaries[node].status_updated = ParseTime(status.status.update_time);
  }
  for (const GpuRow& row : rows) {
    NodeSummary& s = summaries[row.node];
    s.node = row.node;
    CountState(row.state, row.type == "mig" ? s.mig : static_cast<DeviceCounts&>(s));
  }
  std::vector<NodeSummary> out;
  for (auto& [node, s] : summaries) out.push_back(std::move(s));
  std::sort(out.begin(), out.end(),
            [](const NodeSummary& a, const NodeSummary& b) { return NaturalLess(a.node, b.node); });
  return out;
}

}  // namespace

absl::StatusOr<GpuStatusReport> GpuStatus(const View& view, TimePoint now,
                                          const GpuStatusOptions& options) {
  const std::string& only = options.node;
  RETURN_IF_ERROR(CheckNodeKnown(view, only));
  GpuStatusReport report;
  report.now = now;
  SliceGpus gpus = CollectSliceGpus(view, only);
  // The node's own account: it lists the devices it withheld from the slice.
  std::map<DeviceKey, NodeReport> reports;
  for (const auto& [node, status] : view.node_gpu_statuses) {
    if (WantedNode(only, node)) AddNodeReports(node, status, gpus.rows, reports);
  }
  AddClaimHolders(view, gpus);
  for (auto& [key, row] : gpus.rows) {
    auto reported = reports.find(key);
    SetRowState(view, reported == reports.end() ? nullptr : &reported->second, row);
    // What the shares leave; a claim without a share holds it all.
    row.memory_left = row.memory_bytes;
    for (const ClaimHolder& c : row.claims)
      row.memory_left = c.share_id.empty() ? 0 : row.memory_left - c.memory_bytes;
  }
  MarkSharedCountersUnavailable(gpus);

  for (auto& [key, row] : gpus.rows) report.rows.push_back(std::move(row));
  std::sort(report.rows.begin(), report.rows.end(), [](const GpuRow& a, const GpuRow& b) {
    if (a.node != b.node) return NaturalLess(a.node, b.node);
    if (a.device != b.device) return NaturalLess(a.device, b.device);
    return a.driver < b.driver;
  });
  report.nodes = SummarizeNodes(view, only, report.rows);
  for (const std::string& problem : view.pools.problems) {
    // "pool DRIVER/NODE: ..." or "slice NAME: ..."; with --node, those that name it.
    if (only.empty() || problem.find(only) != std::string::npos) report.problems.push_back(problem);
  }
  return report;
}

TextRows StatusRows(const GpuStatusReport& report) {
  TextRows out;
  out.headers = {"NODE", "DEVICE", "TYPE", "PRODUCT", "MEMORY", "STATE", "HOLDER", "FOR", "NOTE"};
  out.rows.reserve(report.rows.size());
  for (const GpuRow& row : report.rows) {
    std::string holder = "-";
    std::string age = "-";
    std::vector<std::string> notes;
    switch (row.state) {
      case GpuState::kClaimed: {
        std::vector<std::string> holders;
        std::vector<std::string> claims;
        for (const ClaimHolder& c : row.claims) {
          std::vector<std::string> pods;
          for (const PodRef& p : c.pods) pods.push_back(p.Text());
          const std::string who =
              pods.empty() ? StrCat("claim ", c.namespace_name, "/", c.name) : Join(pods, ", ");
          holders.push_back(c.user.empty() ? who : StrCat(c.user, " (from label; ", who, ")"));
          if (!c.share_id.empty())
            holders.back() += StrCat(" ", dra::FormatQuantity(c.memory_bytes));
          claims.push_back(StrCat(c.namespace_name, "/", c.name));
          if (pods.empty()) claims.back() += " (no pod yet)";
          if (!c.note.empty()) notes.push_back(StrCat("\"", c.note, "\""));
        }
        holder = Join(holders, "; ");
        age = Since(row.claims.front().since, report.now);
        if (row.shared) {
          notes.insert(notes.begin(),
                       StrCat("shared: ", dra::FormatQuantity(row.memory_left), " of ",
                              dra::FormatQuantity(row.memory_bytes), " left"));
        }
        notes.push_back(StrCat(row.claims.size() == 1 ? "claim " : "claims ", Join(claims, ", ")));
        break;
      }
      case GpuState::kHeld:
        age = Since(row.held->since, report.now);
        if (row.held->kind == kQueuedHold) {  // the kept-for note says the rest
          holder = StrCat(row.held->user, " (canhazgpu queue)");
          break;
        }
        holder = StrCat(row.held->user, " (canhazgpu)");
        if (row.held->until) {
          const Duration left = std::chrono::duration_cast<Duration>(*row.held->until - report.now);
          notes.push_back(StrCat("until ", FormatTimestampSeconds(*row.held->until),
                                 left.count() > 0 ? StrCat(" (in ", FormatDurationShort(left), ")")
                                                  : std::string(" (expired)")));
        } else {
          notes.push_back("while its command runs");
        }
        break;
      case GpuState::kInUse:
        holder = row.usage && !row.usage->users.empty() ? Join(row.usage->users, ", ") : "unknown";
        notes.push_back(StrCat("no reservation, ",
                               dra::FormatQuantity(row.usage ? row.usage->memory_used_bytes : 0),
                               " used"));
        break;
      case GpuState::kUnavailable:
        notes.push_back(StrCat("GPU shared with ", Join(row.blocked_by, ", ")));
        break;
      case GpuState::kTainted:
      case GpuState::kFree:
        break;
    }
    if (!row.kept_for.empty()) {
      notes.push_back(
          StrCat("kept for ", Join(row.kept_for, ", "), " (waiting in the host's queue)"));
    }
    for (const GpuTaint& t : row.taints) {
      notes.push_back(t.reason.empty() ? StrCat("taint ", t.ToString())
                                       : StrCat("taint ", t.ToString(), " (", t.reason, ")"));
    }
    out.rows.push_back({row.node, row.device, row.type.empty() ? "-" : row.type,
                        row.product.empty() ? "-" : row.product,
                        row.memory_bytes > 0 ? dra::FormatQuantity(row.memory_bytes) : "-",
                        GpuStateName(row.state), holder, age, Join(notes, "; ")});
  }
  return out;
}

TextRows SummaryRows(const GpuStatusReport& report) {
  TextRows out;
  out.headers = {"NODE",   "GPUS",    "FREE",        "CLAIMED", "HELD",
                 "IN-USE", "TAINTED", "UNAVAILABLE", "MIG",     "MIG-FREE"};
  for (const NodeSummary& s : report.nodes) {
    const bool mig = s.mig.total > 0;
    out.rows.push_back({s.node, StrCat(s.total), StrCat(s.free), StrCat(s.claimed), StrCat(s.held),
                        StrCat(s.in_use), StrCat(s.tainted), StrCat(s.unavailable),
                        mig ? StrCat(s.mig.total) : "-", mig ? StrCat(s.mig.free) : "-"});
  }
  return out;
}

namespace {

ordered_json CountsJson(const DeviceCounts& c) {
  return {
      {"total", c.total},  {"free", c.free},       {"claimed", c.claimed},        {"held", c.held},
      {"inUse", c.in_use}, {"tainted", c.tainted}, {"unavailable", c.unavailable}};
}

// devices[].claims of StatusJson.
ordered_json ClaimsJson(const std::vector<ClaimHolder>& holders, TimePoint now) {
  ordered_json claims = ordered_json::array();
  for (const ClaimHolder& c : holders) {
    ordered_json pods = ordered_json::array();
    for (const PodRef& p : c.pods) {
      pods.push_back({{"namespace", p.namespace_name}, {"name", p.name}});
      if (!p.job.empty()) {
        pods.back()["job"] = p.job;
        pods.back()["rank"] = p.rank;
      }
    }
    ordered_json j = {{"namespace", c.namespace_name},
                      {"name", c.name},
                      {"pods", std::move(pods)},
                      {"user", c.user}};
    if (!c.note.empty()) j["note"] = c.note;
    if (!c.share_id.empty()) {
      j["shareID"] = c.share_id;
      j["memoryBytes"] = c.memory_bytes;
    }
    if (c.since) {
      j["since"] = FormatTimestampSeconds(*c.since);
      j["seconds"] = Seconds(c.since, now);
    }
    claims.push_back(std::move(j));
  }
  return claims;
}

}  // namespace

ordered_json StatusJson(const GpuStatusReport& report, bool summary_only) {
  ordered_json nodes = ordered_json::array();
  for (const NodeSummary& s : report.nodes) {
    ordered_json n = {{"node", s.node}};
    n.update(CountsJson(s));
    n["mig"] = CountsJson(s.mig);
    if (s.status_updated) n["statusUpdateTime"] = FormatTimestampSeconds(*s.status_updated);
    nodes.push_back(std::move(n));
  }
  ordered_json out = {{"nodes", std::move(nodes)}};
  if (!summary_only) {
    ordered_json devices = ordered_json::array();
    for (const GpuRow& row : report.rows) {
      ordered_json d = {{"node", row.node},
                        {"driver", row.driver},
                        {"device", row.device},
                        {"type", row.type},
                        {"product", row.product},
                        {"memoryBytes", row.memory_bytes},
                        {"state", GpuStateName(row.state)}};
      if (row.shared) {
        d["shared"] = true;
        d["memoryLeftBytes"] = row.memory_left;
      }
      if (!row.claims.empty()) {
        d["claims"] = ClaimsJson(row.claims, report.now);
      }
      if (row.held) {
        ordered_json h = {{"user", row.held->user}, {"kind", row.held->kind}};
        if (row.held->since) h["since"] = FormatTimestampSeconds(*row.held->since);
        if (row.held->until) h["until"] = FormatTimestampSeconds(*row.held->until);
        if (row.held->since) h["seconds"] = Seconds(row.held->since, report.now);
        d["held"] = std::move(h);
      }
      if (row.usage) {
        d["usage"] = {{"users", row.usage->users},
                      {"memoryUsedBytes", row.usage->memory_used_bytes}};
      }
      if (!row.taints.empty()) {
        ordered_json taints = ordered_json::array();
        for (const GpuTaint& t : row.taints) {
          taints.push_back({{"key", t.key},
                            {"value", t.value},
                            {"effect", t.effect},
                            {"reason", t.reason},
                            {"source", t.source}});
        }
        d["taints"] = std::move(taints);
      }
      if (!row.blocked_by.empty()) d["blockedBy"] = row.blocked_by;
      if (!row.kept_for.empty()) d["keptFor"] = row.kept_for;
      devices.push_back(std::move(d));
    }
    out["devices"] = std::move(devices);
  }
  out["problems"] = report.problems;
  return out;
}

}  // namespace canhazgpu::clusterview
