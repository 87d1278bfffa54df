#include "dra/allocator.h"

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "core/strings.h"
#include "dra/capacity.h"

namespace canhazgpu::dra {
namespace {

// Kubernetes appends this to "no such key" errors (cel/errors.go).
std::string WithHint(std::string message) {
  if (message.find("no such key") != std::string::npos) {
    message +=
        " (consider using CEL optional chaining (.? followed by orValue()) or guarding the "
        "check with has() for optional fields)";
  }
  return message;
}

}  // namespace

bool DeviceToleration::Tolerates(const DeviceTaint& taint) const {
  if (!effect.empty() && effect != taint.effect) return false;
  const bool exists = op == "Exists";
  if (key.empty()) return exists;
  if (key != taint.key) return false;
  return exists || value == taint.value;
}

bool ToleratesTaints(const RequestSpec& spec, const Device& device,
                     const DeviceTaint** untolerated) {
  for (const DeviceTaint& taint : device.taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    bool tolerated = false;
    for (const DeviceToleration& t : spec.tolerations) tolerated |= t.Tolerates(taint);
    if (!tolerated) {
      if (untolerated != nullptr) *untolerated = &taint;
      return false;
    }
  }
  return true;
}

struct Allocator::CompiledSpec {
  int request = 0;   // index into claim.requests
  std::string name;  // "req" or "req/sub"
  const RequestSpec* spec = nullptr;
  std::vector<std::pair<CompiledSelector*, std::string>> selectors;  // selector, source
};

absl::StatusOr<std::unique_ptr<Allocator>> Allocator::Create(std::vector<DeviceClass> classes,
                                                             std::vector<DevicePool> pools) {
  std::unique_ptr<Allocator> a(new Allocator());
  for (DeviceClass& c : classes) {
    for (const std::string& s : c.selectors) {
      auto compiled = a->Compile(s);
      if (!compiled.ok()) {
        return absl::InvalidArgumentError(
            StrCat("device class ", c.name, ": selector ", compiled.status().message()));
      }
    }
    std::string name = c.name;
    a->classes_.emplace(std::move(name), std::move(c));
  }
  a->pools_ = std::move(pools);
  std::map<std::pair<std::string, std::string>, int> counter_index;  // (pool/set, counter)
  for (size_t p = 0; p < a->pools_.size(); ++p) {
    const DevicePool& pool = a->pools_[p];
    for (const CounterSet& set : pool.shared_counters) {
      for (const auto& [name, value] : set.counters) {
        counter_index[{StrCat(pool.pool, "/", set.name), name}] =
            static_cast<int>(a->counters_.size());
        a->counters_.push_back(value);
      }
    }
    Node node{pool.pool, static_cast<int>(a->devices_.size()),
              static_cast<int>(pool.devices.size()), static_cast<int>(pool.devices.size())};
    for (const Device& d : pool.devices) {
      FlatDevice flat{&d, static_cast<int>(p), CelDevice(d, pool.driver), {}};
      flat.shared = d.allow_multiple_allocations;
      if (flat.shared) {
        for (const auto& [name, value] : d.capacity) flat.value.push_back(value);
        flat.used.assign(flat.value.size(), 0);
      }
      for (const CounterConsumption& c : d.consumes_counters) {
        for (const auto& [name, amount] : c.counters) {
          auto it = counter_index.find({StrCat(pool.pool, "/", c.counter_set), name});
          if (it == counter_index.end()) {
            return absl::InvalidArgumentError(StrCat("device ", pool.pool, "/", d.name,
                                                     " consumes unknown counter ", c.counter_set,
                                                     "/", name));
          }
          flat.consumes.emplace_back(it->second, amount);
        }
      }
      a->devices_.push_back(std::move(flat));
    }
    node.fresh = node.count;
    a->nodes_.push_back(node);
  }
  a->holder_.assign(a->devices_.size(), "");
  // Class selectors were compiled before the devices were known.
  for (auto& [expression, selector] : a->selectors_)
    selector->results.assign(a->devices_.size(), 0);
  return a;
}

absl::StatusOr<Allocator::CompiledSelector*> Allocator::Compile(const std::string& expression) {
  auto it = selectors_.find(expression);
  if (it != selectors_.end()) return it->second.get();
  static const cel::Env* env = new cel::Env(cel::Env::DraSelector());
  auto program = env->Compile(expression);
  if (!program.ok()) return program.status();  // "LINE:COLUMN: message (near '...')", bounded
  auto selector = std::make_unique<CompiledSelector>(
      CompiledSelector{*std::move(program), std::vector<int8_t>(devices_.size(), 0), {}});
  CompiledSelector* raw = selector.get();
  selectors_.emplace(expression, std::move(selector));
  return raw;
}

int Allocator::Matches(CompiledSelector* selector, int device, std::string* error) {
  const cel::Program* program = &selector->program;
  int8_t& cached = selector->results[static_cast<size_t>(device)];
  if (cached == 0) {
    cel::Value v = program->Evaluate(&devices_[static_cast<size_t>(device)].cel);
    if (v.kind() == cel::Kind::kBool) {
      cached = v.bool_value() ? 1 : 2;
    } else {
      cached = 3;
      selector->errors[device] = v.is_error() ? WithHint(program->DescribeError(v))
                                              : StrCat("CEL result of type ", v.TypeName(),
                                                       " could not be converted to bool");
    }
  }
  if (cached == 3) {
    if (error != nullptr) *error = selector->errors[device];
    return -1;
  }
  return cached == 1 ? 1 : 0;
}

absl::Status Allocator::MarkAllocated(const std::string& pool, const std::string& device,
                                      const std::string& holder,
                                      const std::map<std::string, int64_t>* consumed) {
  for (size_t i = 0; i < devices_.size(); ++i) {
    FlatDevice& d = devices_[i];
    if (d.device->name != device || nodes_[static_cast<size_t>(d.node)].name != pool) continue;
    if (consumed != nullptr && d.shared) {
      // What the cluster recorded counts, whatever the policy says now; a
      // capacity the share does not name counts as 0.
      std::vector<int64_t> amounts;
      for (const auto& [name, value] : d.device->capacity) {
        auto it = consumed->find(name);
        amounts.push_back(it == consumed->end() ? 0 : it->second);
      }
      TakeShare(static_cast<int>(i), holder, std::move(amounts));
    } else if (holder_[i].empty()) {
      Take(static_cast<int>(i), holder);
    }
    return absl::OkStatus();
  }
  return absl::NotFoundError(StrCat("no device ", pool, "/", device));
}

void Allocator::Take(int device, const std::string& holder) {
  FlatDevice& d = devices_[static_cast<size_t>(device)];
  holder_[static_cast<size_t>(device)] = holder;
  if (!d.shared || d.active == 0) {
    for (auto [counter, amount] : d.consumes) counters_[static_cast<size_t>(counter)] -= amount;
  }
  RecountFree(d.node);
}

void Allocator::TakeShare(int device, const std::string& holder, std::vector<int64_t> amounts) {
  FlatDevice& d = devices_[static_cast<size_t>(device)];
  if (d.active++ == 0 && holder_[static_cast<size_t>(device)].empty()) {
    for (auto [counter, amount] : d.consumes) counters_[static_cast<size_t>(counter)] -= amount;
  }
  for (size_t k = 0; k < amounts.size(); ++k) d.used[k] += amounts[k];
  d.shares.emplace_back(holder, std::move(amounts));
  RecountFree(d.node);
}

void Allocator::RecountFree(int node) {
  Node& n = nodes_[static_cast<size_t>(node)];
  n.free = 0;
  n.fresh = 0;
  n.max_left.clear();
  for (int d = n.first; d < n.first + n.count; ++d) {
    if (!holder_[static_cast<size_t>(d)].empty()) continue;
    const FlatDevice& dev = devices_[static_cast<size_t>(d)];
    if (dev.shared && dev.active > 0) {
      ++n.free;
      size_t k = 0;
      for (const auto& [name, value] : dev.device->capacity) {
        const int64_t left = value - dev.used[k++];
        auto it = std::find_if(n.max_left.begin(), n.max_left.end(),
                               [&name = name](const auto& m) { return m.first == name; });
        if (it == n.max_left.end()) {
          n.max_left.emplace_back(name, left);
        } else {
          it->second = std::max(it->second, left);
        }
      }
      continue;
    }
    // A shared device already in use has its counters consumed by itself.
    bool fits = true;
    if (!dev.shared || dev.active == 0) {
      for (auto [counter, amount] : dev.consumes)
        fits &= counters_[static_cast<size_t>(counter)] >= amount;
    }
    n.free += fits;
    n.fresh += fits;
  }
}

bool Allocator::MayFitAShare(const std::vector<CompiledSpec>& specs, const Node& node) const {
  if (node.max_left.empty()) return false;
  for (const CompiledSpec& s : specs) {
    if (s.spec->admin_access) continue;
    // What a request names it consumes at least (rounding only adds); one
    // that names nothing takes a default this does not know.
    bool fits = true;
    for (const auto& [name, amount] : s.spec->capacity_requests) {
      auto it = std::find_if(node.max_left.begin(), node.max_left.end(),
                             [&name = name](const auto& m) { return m.first == name; });
      fits &= it != node.max_left.end() && it->second >= amount;
    }
    if (fits) return true;
  }
  return false;
}

absl::StatusOr<std::vector<Allocator::CompiledSpec>> Allocator::CompileClaim(const Claim& claim) {
  if (claim.requests.empty()) return absl::InvalidArgumentError("the claim has no requests");
  std::vector<CompiledSpec> specs;
  for (size_t r = 0; r < claim.requests.size(); ++r) {
    const DeviceRequest& request = claim.requests[r];
    if (request.alternatives.empty()) {
      return absl::InvalidArgumentError(
          StrCat("request ", request.name, " has neither exactly nor firstAvailable"));
    }
    for (const RequestSpec& spec : request.alternatives) {
      CompiledSpec c;
      c.request = static_cast<int>(r);
      c.name = request.first_available ? StrCat(request.name, "/", spec.name) : request.name;
      c.spec = &spec;
      if (!spec.all && spec.count < 1)
        return absl::InvalidArgumentError(StrCat("request ", c.name, ": count must be at least 1"));
      auto cls = classes_.find(spec.device_class);
      if (cls == classes_.end()) {
        return absl::InvalidArgumentError(
            StrCat("request ", c.name, ": device class '", spec.device_class, "' not found"));
      }
      for (const std::string& s : cls->second.selectors) {
        auto program = Compile(s);
        if (!program.ok()) return program.status();
        c.selectors.emplace_back(*program, StrCat("class ", cls->first));
      }
      for (const std::string& s : spec.selectors) {
        auto program = Compile(s);
        if (!program.ok())
          return absl::InvalidArgumentError(
              StrCat("request ", c.name, ": selector ", program.status().message()));
        c.selectors.emplace_back(*program, "request");
      }
      specs.push_back(std::move(c));
    }
  }
  for (const DeviceConstraint& c : claim.constraints) {
    if (c.match_attribute.empty() == c.distinct_attribute.empty()) {
      return absl::InvalidArgumentError(
          "a constraint needs exactly one of matchAttribute and distinctAttribute");
    }
  }
  return specs;
}

// One depth-first search for one claim on one node.
class Allocator::Search {
 public:
  Search(Allocator& a, const Claim& claim, const std::vector<CompiledSpec>& specs, const Node& node)
      : a_(a), claim_(claim), specs_(specs), node_(node) {}

  // Fills candidates; false with *error on a CEL error.
  bool Prepare(std::string* error) {
    candidates_.resize(specs_.size());
    demand_.resize(specs_.size());
    tainted_.assign(specs_.size(), 0);
    for (size_t s = 0; s < specs_.size(); ++s) {
      for (int d = node_.first; d < node_.first + node_.count; ++d) {
        bool ok = true;
        for (const auto& [program, source] : specs_[s].selectors) {
          int m = a_.Matches(program, d, error);
          if (m < 0) return false;
          if (m == 0) {
            ok = false;
            break;
          }
        }
        if (!ok) continue;
        const Device& device = *a_.devices_[static_cast<size_t>(d)].device;
        // capacity.requests filter like a selector; `need` is a share's
        // consumption on a multi-allocatable device.
        std::vector<int64_t> need;
        if (!CapacityDemand(device, specs_[s].spec->capacity_requests, &need)) continue;
        // A tainted device may come back: it counts as possible, not free.
        if (!ToleratesTaints(*specs_[s].spec, device)) {
          ++tainted_[s];
          continue;
        }
        candidates_[s].push_back(d);
        demand_[s].push_back(std::move(need));
      }
    }
    by_request_.resize(claim_.requests.size());
    for (size_t s = 0; s < specs_.size(); ++s)
      by_request_[static_cast<size_t>(specs_[s].request)].push_back(static_cast<int>(s));
    match_value_.resize(claim_.constraints.size());
    match_count_.assign(claim_.constraints.size(), 0);
    distinct_.resize(claim_.constraints.size());
    return true;
  }

  // Whether some request can never be met here, whatever is allocated.
  bool Never() const {
    for (const std::vector<int>& alternatives : by_request_) {
      bool possible = false;
      for (int s : alternatives) {
        const RequestSpec& spec = *specs_[static_cast<size_t>(s)].spec;
        size_t n = candidates_[static_cast<size_t>(s)].size() +
                   static_cast<size_t>(tainted_[static_cast<size_t>(s)]);
        if (spec.all ? n > 0 : static_cast<int64_t>(n) >= spec.count) possible = true;
      }
      if (!possible) return true;
    }
    return false;
  }

  bool Run() { return Request(0); }
  bool limit_hit() const { return limit_hit_; }
  const std::vector<std::pair<int, int>>& picks() const { return picks_; }  // spec, device
  // Per pick: what it consumes of a shared device (empty otherwise).
  const std::vector<const std::vector<int64_t>*>& needs() const { return needs_; }
  const std::vector<std::vector<int>>& candidates() const { return candidates_; }
  const std::vector<std::string>& unmet() const { return unmet_; }

 private:
  bool Request(size_t r) {
    if (r == by_request_.size()) return true;
    for (int s : by_request_[r]) {
      const RequestSpec& spec = *specs_[static_cast<size_t>(s)].spec;
      const std::vector<int>& cands = candidates_[static_cast<size_t>(s)];
      if (spec.all) {
        if (cands.empty()) continue;
        size_t mark = picks_.size();
        bool ok = true;
        for (size_t i = 0; i < cands.size(); ++i) {
          if (!TryAdd(s, i)) {
            ok = false;
            break;
          }
        }
        if (ok && Request(r + 1)) return true;
        while (picks_.size() > mark) Undo();
        continue;
      }
      if (Choose(r, s, 0, spec.count)) return true;
      if (limit_hit_) return false;
    }
    return false;
  }

  bool Choose(size_t r, int s, size_t start, int64_t left) {
    if (left == 0) return Request(r + 1);
    const std::vector<int>& cands = candidates_[static_cast<size_t>(s)];
    for (size_t i = start; i + static_cast<size_t>(left) <= cands.size(); ++i) {
      if (++steps_ > a_.step_limit_) {
        limit_hit_ = true;
        return false;
      }
      if (!TryAdd(s, i)) continue;
      if (Choose(r, s, i + 1, left - 1)) return true;
      Undo();
      if (limit_hit_) return false;
    }
    return false;
  }

  bool Applies(const DeviceConstraint& c, int s) const {
    if (c.requests.empty()) return true;
    const CompiledSpec& spec = specs_[static_cast<size_t>(s)];
    const std::string& base = claim_.requests[static_cast<size_t>(spec.request)].name;
    for (const std::string& name : c.requests) {
      if (name == base || name == spec.name) return true;
    }
    return false;
  }

  // Tries candidate i of spec s.
  bool TryAdd(int s, size_t i) {
    const int d = candidates_[static_cast<size_t>(s)][i];
    const std::vector<int64_t>& need = demand_[static_cast<size_t>(s)][i];
    const RequestSpec& spec = *specs_[static_cast<size_t>(s)].spec;
    FlatDevice& dev = a_.devices_[static_cast<size_t>(d)];
    // A multi-allocatable device may serve several requests of the claim
    // (distinctAttribute keeps them apart where that matters).
    if (!dev.shared && std::find(in_claim_.begin(), in_claim_.end(), d) != in_claim_.end())
      return false;
    if (!spec.admin_access && !a_.holder_[static_cast<size_t>(d)].empty()) return false;
    const bool share = dev.shared && !spec.admin_access;
    if (share) {
      for (size_t k = 0; k < need.size(); ++k) {
        if (dev.used[k] + need[k] > dev.value[k]) return false;
      }
    }
    const bool counts = !spec.admin_access && !(dev.shared && dev.active > 0);
    if (counts) {
      for (auto [counter, amount] : dev.consumes) {
        if (a_.counters_[static_cast<size_t>(counter)] < amount) return false;
      }
    }
    const std::string& driver = a_.pools_[static_cast<size_t>(dev.node)].driver;
    // Each applicable constraint's attribute of the device, looked up once
    // for the check and kept for the commit (nullptr: does not apply).
    absl::InlinedVector<const AttributeValue*, 4> values(claim_.constraints.size(), nullptr);
    for (size_t c = 0; c < claim_.constraints.size(); ++c) {
      const DeviceConstraint& con = claim_.constraints[c];
      if (!Applies(con, s)) continue;
      const std::string& attr =
          con.match_attribute.empty() ? con.distinct_attribute : con.match_attribute;
      const AttributeValue* v = FindAttribute(*dev.device, driver, attr);
      if (v == nullptr) return NoteUnmet(c);
      if (!con.match_attribute.empty()) {
        if (match_count_[c] > 0 && !(match_value_[c] == *v)) return NoteUnmet(c);
      } else {
        for (const AttributeValue& seen : distinct_[c]) {
          if (seen == *v) return NoteUnmet(c);
        }
      }
      values[c] = v;
    }
    // Commit.
    for (size_t c = 0; c < claim_.constraints.size(); ++c) {
      const AttributeValue* v = values[c];
      if (v == nullptr) continue;
      if (!claim_.constraints[c].match_attribute.empty()) {
        if (match_count_[c]++ == 0) match_value_[c] = *v;
      } else {
        distinct_[c].push_back(*v);
      }
    }
    if (counts) {
      for (auto [counter, amount] : dev.consumes)
        a_.counters_[static_cast<size_t>(counter)] -= amount;
    }
    if (share) {
      for (size_t k = 0; k < need.size(); ++k) dev.used[k] += need[k];
      ++dev.active;
    }
    in_claim_.push_back(d);
    picks_.emplace_back(s, d);
    needs_.push_back(share ? &need : nullptr);
    return true;
  }

  bool NoteUnmet(size_t c) {
    const DeviceConstraint& con = claim_.constraints[c];
    std::string text = con.match_attribute.empty()
                           ? StrCat("distinctAttribute ", con.distinct_attribute)
                           : StrCat("matchAttribute ", con.match_attribute);
    if (std::find(unmet_.begin(), unmet_.end(), text) == unmet_.end()) unmet_.push_back(text);
    return false;
  }

  void Undo() {
    auto [s, d] = picks_.back();
    const std::vector<int64_t>* need = needs_.back();
    picks_.pop_back();
    needs_.pop_back();
    in_claim_.pop_back();
    const RequestSpec& spec = *specs_[static_cast<size_t>(s)].spec;
    FlatDevice& dev = a_.devices_[static_cast<size_t>(d)];
    if (need != nullptr) {
      for (size_t k = 0; k < need->size(); ++k) dev.used[k] -= (*need)[k];
      --dev.active;
    }
    if (!spec.admin_access && !(dev.shared && dev.active > 0)) {
      for (auto [counter, amount] : dev.consumes)
        a_.counters_[static_cast<size_t>(counter)] += amount;
    }
    for (size_t c = 0; c < claim_.constraints.size(); ++c) {
      const DeviceConstraint& con = claim_.constraints[c];
      if (!Applies(con, s)) continue;
      if (!con.match_attribute.empty()) {
        --match_count_[c];  // TryAdd admits only devices that have the attribute
      } else if (!distinct_[c].empty()) {
        distinct_[c].pop_back();
      }
    }
  }

  Allocator& a_;
  const Claim& claim_;
  const std::vector<CompiledSpec>& specs_;
  const Node& node_;
  std::vector<std::vector<int>> candidates_;               // per spec
  std::vector<std::vector<std::vector<int64_t>>> demand_;  // per spec, per candidate
  std::vector<int> tainted_;                               // per spec: matching but not tolerated
  std::vector<std::vector<int>> by_request_;               // request -> spec indexes in order
  std::vector<AttributeValue> match_value_;
  std::vector<int> match_count_;
  std::vector<std::vector<AttributeValue>> distinct_;
  std::vector<int> in_claim_;
  std::vector<std::pair<int, int>> picks_;
  std::vector<const std::vector<int64_t>*> needs_;
  std::vector<std::string> unmet_;
  int64_t steps_ = 0;
  bool limit_hit_ = false;
};

// What became of one request's candidates on `node`: how many devices each
// selector rejected, and why each matching device is not available.
RequestReport Allocator::ReportRequest(const CompiledSpec& spec, const Node& node) {
  RequestReport report;
  report.request = spec.name;
  report.wanted = spec.spec->all ? -1 : spec.spec->count;
  report.devices = node.count;
  for (const auto& [program, source] : spec.selectors)
    report.selectors.push_back({program->program.source(), source, 0, 0, ""});
  for (int d = node.first; d < node.first + node.count; ++d) {
    bool ok = true;
    for (size_t i = 0; i < spec.selectors.size() && ok; ++i) {
      std::string error;
      int m = Matches(spec.selectors[i].first, d, &error);
      if (m == 1) continue;
      ok = false;
      report.selectors[i].rejected++;
      if (m < 0) {
        report.selectors[i].errors++;
        if (report.selectors[i].first_error.empty()) report.selectors[i].first_error = error;
      }
    }
    if (!ok) continue;
    ++report.matching;
    const FlatDevice& dev = devices_[static_cast<size_t>(d)];
    std::vector<int64_t> need;
    std::string why;
    if (!CapacityDemand(*dev.device, spec.spec->capacity_requests, &need, &why)) {
      if (report.capacity_rejected++ == 0)
        report.capacity_reason = StrCat(dev.device->name, ": ", why);
      continue;
    }
    if (!holder_[static_cast<size_t>(d)].empty() && !spec.spec->admin_access) {
      report.taken.emplace_back(dev.device->name, holder_[static_cast<size_t>(d)]);
      continue;
    }
    const size_t short_before = report.short_of_capacity.size();
    if (dev.shared && !spec.spec->admin_access) ReportShortage(d, need, &report);
    if (report.short_of_capacity.size() > short_before) continue;
    bool fits = true;
    if (!dev.shared || dev.active == 0) {
      for (auto [counter, amount] : dev.consumes)
        fits &= counters_[static_cast<size_t>(counter)] >= amount;
    }
    if (!fits && !spec.spec->admin_access) {
      report.counter_blocked.push_back(dev.device->name);
      continue;
    }
    const DeviceTaint* taint = nullptr;
    if (!ToleratesTaints(*spec.spec, *dev.device, &taint)) {
      report.tainted.emplace_back(dev.device->name, taint->ToString());
      continue;
    }
    ++report.available;
  }
  return report;
}

void Allocator::ReportShortage(int d, const std::vector<int64_t>& need,
                               RequestReport* report) const {
  const FlatDevice& dev = devices_[static_cast<size_t>(d)];
  size_t k = 0;
  for (const auto& [name, value] : dev.device->capacity) {
    const size_t i = k++;
    if (dev.used[i] + need[i] <= value) continue;
    ShareReport r{dev.device->name, name, value, value - dev.used[i], need[i], {}};
    for (const auto& [holder, amounts] : dev.shares) r.holders.emplace_back(holder, amounts[i]);
    report->short_of_capacity.push_back(std::move(r));
  }
}

// The search left counters and shared capacity consumed; record who
// holds each device or share.
Allocation Allocator::Commit(const Claim& claim, const std::vector<CompiledSpec>& specs,
                             const Search& search, int n) {
  // The search left counters consumed; mark the devices held.
  Allocation out;
  out.node = nodes_[static_cast<size_t>(n)].name;
  for (size_t p = 0; p < search.picks().size(); ++p) {
    auto [s, d] = search.picks()[p];
    const CompiledSpec& spec = specs[static_cast<size_t>(s)];
    FlatDevice& dev = devices_[static_cast<size_t>(d)];
    AllocatedDevice& result = out.devices.emplace_back();
    result = {spec.name,
              pools_[static_cast<size_t>(dev.node)].driver,
              out.node,
              dev.device->name,
              spec.spec->admin_access,
              "",
              {}};
    if (const std::vector<int64_t>* need = search.needs()[p]; need != nullptr) {
      // The search consumed the capacity; record who holds the share.
      result.share_id = NewShareId();
      size_t k = 0;
      for (const auto& [name, value] : dev.device->capacity)
        result.consumed_capacity[name] = (*need)[k++];
      dev.shares.emplace_back(claim.name, *need);
    } else if (!spec.spec->admin_access) {
      holder_[static_cast<size_t>(d)] = claim.name;
    }
  }
  RecountFree(n);
  return out;
}

absl::StatusOr<Allocation> Allocator::Allocate(const Claim& claim, Explanation* why) {
  auto specs = CompileClaim(claim);
  if (!specs.ok()) {
    if (why != nullptr) why->error = std::string(specs.status().message());
    return specs.status();
  }
  bool any_possible = false;
  int best_node = -1;
  bool limit_hit = false;
  std::vector<std::string> unmet;
  bool needs_free = false;  // admin-only claims may use held devices
  for (const CompiledSpec& s : *specs) needs_free |= !s.spec->admin_access;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const Node& node = nodes_[n];
    // A node without a free device cannot take an ordinary request.
    if (needs_free && node.free == 0) continue;
    if (needs_free && node.fresh == 0 && !MayFitAShare(*specs, node)) continue;
    Search search(*this, claim, *specs, node);
    std::string error;
    if (!search.Prepare(&error)) {
      if (why != nullptr) {
        why->node = node.name;
        why->error = error;
      }
      return absl::InvalidArgumentError(StrCat("CEL runtime error: ", error));
    }
    if (search.Never()) continue;
    any_possible = true;
    if (best_node < 0 || nodes_[static_cast<size_t>(best_node)].free == 0)
      best_node = static_cast<int>(n);
    if (search.Run()) return Commit(claim, *specs, search, static_cast<int>(n));
    if (search.limit_hit()) limit_hit = true;
    for (const std::string& u : search.unmet()) {
      if (std::find(unmet.begin(), unmet.end(), u) == unmet.end()) unmet.push_back(u);
    }
  }
  // Nodes skipped for being full may still be able to satisfy it later.
  for (size_t n = 0; n < nodes_.size() && !any_possible; ++n) {
    Search search(*this, claim, *specs, nodes_[n]);
    std::string error;
    if (!search.Prepare(&error))
      return absl::InvalidArgumentError(StrCat("CEL runtime error: ", error));
    if (!search.Never()) {
      any_possible = true;
      best_node = static_cast<int>(n);
    }
  }
  if (why != nullptr) {
    int node = best_node >= 0 ? best_node : (nodes_.empty() ? -1 : 0);
    *why = Explanation{};
    why->never = !any_possible;
    why->search_limit = limit_hit;
    why->unmet_constraints = unmet;
    if (node >= 0) {
      const Node& nd = nodes_[static_cast<size_t>(node)];
      why->node = nd.name;
      for (const CompiledSpec& s : *specs) why->requests.push_back(ReportRequest(s, nd));
    }
  }
  if (!any_possible) {
    return absl::FailedPreconditionError(
        StrCat("claim ", claim.name,
               " can never be satisfied: no device matches every selector in enough numbers"));
  }
  return absl::ResourceExhaustedError(StrCat("claim ", claim.name, " does not fit now"));
}

}  // namespace canhazgpu::dra
