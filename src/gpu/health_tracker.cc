#include "gpu/health_tracker.h"

#include <algorithm>

#include "core/duration.h"
#include "core/strings.h"

namespace canhazgpu::gpu {

std::string_view HealthProblemKindName(HealthProblemKind kind) {
  switch (kind) {
    case HealthProblemKind::kXid:
      return "xid";
    case HealthProblemKind::kGpuLost:
      return "gpu-lost";
    case HealthProblemKind::kEccRetirementPending:
      return "ecc-retirement-pending";
    case HealthProblemKind::kUnmonitored:
      return "unmonitored";
  }
  return "unknown";
}

bool GpuHealth::HasFatalProblem() const {
  return std::any_of(problems.begin(), problems.end(),
                     [](const HealthProblem& p) { return p.severity == HealthSeverity::kFatal; });
}

const HealthProblem* GpuHealth::Find(HealthProblemKind kind, HealthSeverity severity) const {
  for (const HealthProblem& p : problems) {
    if (p.kind == kind && p.severity == severity) return &p;
  }
  return nullptr;
}

namespace {

std::string GpuName(const GpuHealth& gpu) {
  return StrCat("gpu ", gpu.minor >= 0 ? gpu.minor : gpu.index,
                gpu.uuid.empty() ? "" : StrCat(" (", gpu.uuid, ")"));
}

}  // namespace

HealthTracker::HealthTracker(const Clock& clock, HealthOptions options)
    : clock_(clock), options_(std::move(options)) {}

void HealthTracker::AddGpu(int index, int minor, std::string uuid) {
  MutexLock lock(mu_);
  if (Find(index) != nullptr) return;
  GpuHealth gpu;
  gpu.index = index;
  gpu.minor = minor;
  gpu.uuid = std::move(uuid);
  auto at = std::find_if(state_.gpus.begin(), state_.gpus.end(),
                         [&](const GpuHealth& g) { return g.index > index; });
  state_.gpus.insert(at, std::move(gpu));
  Changed();
}

GpuHealth* HealthTracker::Find(int index) {
  for (GpuHealth& g : state_.gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

void HealthTracker::RecordXid(int index, uint64_t xid, std::string_view detail) {
  MutexLock lock(mu_);
  GpuHealth* gpu = Find(index);
  if (gpu == nullptr) return;
  const HealthSeverity severity = options_.informational_xids.contains(xid)
                                      ? HealthSeverity::kInformational
                                      : HealthSeverity::kFatal;
  const TimePoint now = clock_.Now();
  auto it = std::find_if(gpu->problems.begin(), gpu->problems.end(), [&](const HealthProblem& p) {
    return p.kind == HealthProblemKind::kXid && p.severity == severity;
  });
  if (it == gpu->problems.end()) {
    HealthProblem p;
    p.kind = HealthProblemKind::kXid;
    p.severity = severity;
    p.since = now;
    gpu->problems.push_back(p);
    it = gpu->problems.end() - 1;
  }
  // The latest XID of a severity stands for the problem (one taint per key);
  // `since` stays, so the taint's timeAdded does not move.
  it->xid = xid;
  it->xid_count += 1;
  it->last_seen = now;
  const bool fatal = severity == HealthSeverity::kFatal;
  it->message = StrCat(GpuName(*gpu), ": XID ", xid, fatal ? " (fatal)" : " (informational)",
                       detail, " at ", FormatTimestampSeconds(now));
  if (it->xid_count > 1) {
    it->message += StrCat("; ", it->xid_count, fatal ? " fatal" : " informational", " XIDs since ",
                          FormatTimestampSeconds(it->since));
  }
  Changed();
}

void HealthTracker::SetLost(int index, bool lost, std::string_view reason) {
  MutexLock lock(mu_);
  if (GpuHealth* gpu = Find(index)) {
    Set(*gpu, HealthProblemKind::kGpuLost, HealthSeverity::kFatal, lost, reason);
  }
}

void HealthTracker::SetEccRetirementPending(int index, bool pending) {
  MutexLock lock(mu_);
  if (GpuHealth* gpu = Find(index)) {
    Set(*gpu, HealthProblemKind::kEccRetirementPending, HealthSeverity::kFatal, pending, "");
  }
}

void HealthTracker::SetUnmonitored(int index, bool unmonitored, std::string_view reason) {
  MutexLock lock(mu_);
  if (GpuHealth* gpu = Find(index)) {
    Set(*gpu, HealthProblemKind::kUnmonitored, HealthSeverity::kInformational, unmonitored, reason);
  }
}

void HealthTracker::Set(GpuHealth& gpu, HealthProblemKind kind, HealthSeverity severity,
                        bool present, std::string_view reason) {
  auto it = std::find_if(gpu.problems.begin(), gpu.problems.end(),
                         [&](const HealthProblem& p) { return p.kind == kind; });
  // Polls repeat what they saw; only a change is a change.
  if (present == (it != gpu.problems.end())) return;
  if (!present) {
    gpu.problems.erase(it);
    Changed();
    return;
  }
  HealthProblem p;
  p.kind = kind;
  p.severity = severity;
  p.since = p.last_seen = clock_.Now();
  const std::string since = FormatTimestampSeconds(p.since);
  const std::string why = reason.empty() ? "" : StrCat(" (", reason, ")");
  switch (kind) {
    case HealthProblemKind::kGpuLost:
      p.message = StrCat(GpuName(gpu), ": lost", why, " since ", since);
      break;
    case HealthProblemKind::kEccRetirementPending:
      p.message = StrCat(GpuName(gpu), ": ECC page retirement pending since ", since,
                         "; a GPU reset or reboot retires the pages");
      break;
    case HealthProblemKind::kUnmonitored:
      p.message = StrCat(GpuName(gpu), ": health not monitored", why);
      break;
    case HealthProblemKind::kXid:
      break;  // RecordXid's
  }
  gpu.problems.push_back(std::move(p));
  Changed();
}

void HealthTracker::ExpireQuietXids() {
  MutexLock lock(mu_);
  const TimePoint now = clock_.Now();
  for (GpuHealth& gpu : state_.gpus) {
    const size_t before = gpu.problems.size();
    std::erase_if(gpu.problems, [&](const HealthProblem& p) {
      return p.kind == HealthProblemKind::kXid && now - p.last_seen >= options_.xid_quiet_period;
    });
    if (gpu.problems.size() != before) Changed();
  }
}

void HealthTracker::Changed() {
  ++state_.version;
  changed_.notify_all();
}

void HealthTracker::Stop() {
  MutexLock lock(mu_);
  stopped_ = true;
  changed_.notify_all();
}

HealthSnapshot HealthTracker::Snapshot() const {
  MutexLock lock(mu_);
  return state_;
}

uint64_t HealthTracker::WaitForChange(uint64_t seen, Duration timeout) {
  MutexLock lock(mu_);
  changed_.wait_for(lock, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopped_ || state_.version != seen;
  });
  return state_.version;
}

}  // namespace canhazgpu::gpu
