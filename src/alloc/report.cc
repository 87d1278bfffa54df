#include "alloc/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::alloc {
namespace {

int64_t Ms(TimePoint t) { return ToEpochMillis(t); }

// The samples of one GPU, in time order.
using SampleSpan =
    std::pair<std::vector<UsageSample>::const_iterator, std::vector<UsageSample>::const_iterator>;

// Splits [start, end) of one GPU by what its samples say.
BusySplit Split(SampleSpan samples, int64_t start, int64_t end) {
  BusySplit out;
  int64_t covered_until = start;
  // The first sample that may cover `start` is the last one at or before it.
  auto it = std::upper_bound(samples.first, samples.second, start,
                             [](int64_t t, const UsageSample& s) { return t < Ms(s.at); });
  if (it != samples.first) --it;
  for (; it != samples.second && Ms(it->at) < end; ++it) {
    int64_t from = std::max(Ms(it->at), start);
    int64_t until = Ms(it->at) + kSampleSpan.count();
    if (auto next = std::next(it); next != samples.second) until = std::min(until, Ms(next->at));
    until = std::min(until, end);
    if (until <= from) continue;
    if (from > covered_until) out.unknown_ms += from - covered_until;
    (it->busy ? out.busy_ms : out.idle_ms) += until - from;
    covered_until = until;
  }
  if (end > covered_until) out.unknown_ms += end - covered_until;
  return out;
}

void Add(BusySplit& into, const BusySplit& b) {
  into.busy_ms += b.busy_ms;
  into.idle_ms += b.idle_ms;
  into.unknown_ms += b.unknown_ms;
}

int64_t& KindTime(UserUsage& u, ReservationKind kind) {
  switch (kind) {
    case ReservationKind::kRun:
      return u.run_ms;
    case ReservationKind::kManual:
      return u.manual_ms;
    case ReservationKind::kK8s:
      return u.k8s_ms;
  }
  return u.manual_ms;
}

struct Interval {
  int gpu;
  uint32_t uid;
  std::string user;
  ReservationKind kind;
  int64_t start;
  int64_t end;
  double part;  // of the GPU: 1 for a whole GPU, a share's memory over its GPU's
  bool share;
};

// A share's part of its GPU; 1 for a whole GPU, and for a share whose GPU's
// shareable memory was not recorded (the most it could have been).
double PartOfGpu(uint64_t memory, uint64_t shareable) {
  if (memory == 0 || shareable == 0) return 1.0;
  return std::min(1.0, static_cast<double>(memory) / static_cast<double>(shareable));
}

// `split` counted at `part`, as whole milliseconds adding up to `counted`
// (that part of its time). A whole GPU (part 1) keeps it as it is.
BusySplit PartOf(const BusySplit& split, double part, int64_t counted) {
  if (part == 1.0) return split;
  BusySplit out{.busy_ms = std::llround(static_cast<double>(split.busy_ms) * part),
                .idle_ms = std::llround(static_cast<double>(split.idle_ms) * part)};
  out.unknown_ms = counted - out.busy_ms - out.idle_ms;
  if (out.unknown_ms < 0) {  // both rounded up: the excess comes off idle
    out.idle_ms += out.unknown_ms;
    out.unknown_ms = 0;
  }
  return out;
}

}  // namespace

absl::Status RecordUsage(store::StateTransaction& txn, const std::vector<GpuUsage>& gpus,
                         uint64_t threshold_bytes, TimePoint now) {
  ASSIGN_OR_RETURN(std::optional<TimePoint> last, txn.LastUsageSample());
  if (last && now - *last < kSampleEvery && now >= *last) return absl::OkStatus();
  std::vector<UsageSample> samples;
  for (const GpuUsage& usage : gpus) {
    const GpuInfo& g = usage.info;
    if (!g.error.empty()) continue;  // nothing known: leave the time unknown
    samples.push_back({.gpu = g.index,
                       .at = now,
                       .memory_used_bytes = g.memory_used_bytes,
                       .busy = g.memory_used_bytes > threshold_bytes});
  }
  if (samples.empty()) return absl::OkStatus();
  return txn.AppendUsageSamples(samples, now - kSampleRetention);
}

UsageReport BuildReport(const ReportInput& input) {
  UsageReport report{.from = input.from, .to = input.to, .gpu_count = input.gpu_count};
  const int64_t from = Ms(input.from), to = Ms(input.to);
  report.available_ms = std::max<int64_t>(0, to - from) * input.gpu_count;
  std::vector<Interval> intervals;
  for (const HistoryRecord& h : input.history) {
    intervals.push_back({h.gpu, h.uid, h.user, h.kind, Ms(h.start), Ms(h.end),
                         PartOfGpu(h.memory, h.shareable), h.memory > 0});
  }
  for (const Reservation& r : input.active) {
    if (r.queue_id) continue;  // a partial hold of a waiting request: not yet in use
    intervals.push_back({r.gpu, r.uid, r.user, r.kind, Ms(r.start), to,
                         PartOfGpu(r.memory, r.shareable), r.IsShare()});
  }
  std::map<int, SampleSpan> by_gpu;
  for (auto it = input.samples.begin(); it != input.samples.end();) {
    auto end = std::find_if(it, input.samples.end(),
                            [&](const UsageSample& s) { return s.gpu != it->gpu; });
    by_gpu[it->gpu] = {it, end};
    it = end;
  }
  std::map<std::string, UserUsage> users;
  std::set<std::tuple<uint32_t, int, int64_t>> seen;  // one multi-GPU reservation
  for (const Interval& i : intervals) {
    int64_t start = std::max(i.start, from), end = std::min(i.end, to);
    // A run shorter than the clock's millisecond still happened: it counts
    // as a reservation, with no time.
    const bool instant = i.start == i.end && i.start >= from && i.start <= to;
    if (end <= start && !instant) continue;
    UserUsage& u = users[i.user];
    u.user = i.user;
    const int64_t counted =
        i.part == 1.0 ? end - start : std::llround(static_cast<double>(end - start) * i.part);
    KindTime(u, i.kind) += counted;
    if (i.share) u.shared_ms += counted;
    auto samples = by_gpu.find(i.gpu);
    Add(u.split, PartOf(samples == by_gpu.end() ? BusySplit{.unknown_ms = end - start}
                                                : Split(samples->second, start, end),
                        i.part, counted));
    if (seen.insert({i.uid, static_cast<int>(i.kind), i.start}).second) {
      u.reservations++;
      u.run_count += i.kind == ReservationKind::kRun;
      u.manual_count += i.kind == ReservationKind::kManual;
    }
    u.longest_ms = std::max(u.longest_ms, i.end - i.start);
  }
  report.total.user = "TOTAL";
  for (auto& [name, u] : users) {
    report.total.run_ms += u.run_ms;
    report.total.manual_ms += u.manual_ms;
    report.total.k8s_ms += u.k8s_ms;
    report.total.shared_ms += u.shared_ms;
    Add(report.total.split, u.split);
    report.total.reservations += u.reservations;
    report.total.run_count += u.run_count;
    report.total.manual_count += u.manual_count;
    report.total.longest_ms = std::max(report.total.longest_ms, u.longest_ms);
    report.users.push_back(std::move(u));
  }
  std::stable_sort(
      report.users.begin(), report.users.end(),
      [](const UserUsage& a, const UserUsage& b) { return a.total_ms() > b.total_ms(); });
  return report;
}

absl::StatusOr<UsageReport> CollectReport(store::StateStore& store, int days, TimePoint now) {
  if (days < 1 || days > kMaxReportDays) {
    return absl::InvalidArgumentError(
        StrCat("report period of ", days, " days: must be from 1 to ", kMaxReportDays));
  }
  ReportInput input{.from = now - std::chrono::hours(24) * days, .to = now};
  RETURN_IF_ERROR(store.Read([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(std::optional<PoolConfig> pool, txn.GetPool());
    if (!pool) return absl::FailedPreconditionError("no GPU pool yet: run 'canhazgpu admin' first");
    input.gpu_count = pool->gpu_count;
    ASSIGN_OR_RETURN(input.history, txn.HistorySince(input.from));
    ASSIGN_OR_RETURN(input.active, txn.ListReservations());
    ASSIGN_OR_RETURN(input.samples, txn.UsageSamplesSince(input.from - kSampleSpan));
    return absl::OkStatus();
  }));
  return BuildReport(input);
}

}  // namespace canhazgpu::alloc
