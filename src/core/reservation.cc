#include "core/reservation.h"

#include "core/strings.h"

namespace canhazgpu {

std::string_view KindName(ReservationKind kind) {
  switch (kind) {
    case ReservationKind::kRun:
      return "run";
    case ReservationKind::kManual:
      return "manual";
    case ReservationKind::kK8s:
      return "k8s";
  }
  return "manual";
}

std::string_view KindLabel(ReservationKind kind) {
  switch (kind) {
    case ReservationKind::kRun:
      return "RUN";
    case ReservationKind::kManual:
      return "MANUAL";
    case ReservationKind::kK8s:
      return "K8S";
  }
  return "MANUAL";
}

std::optional<ReservationKind> ParseKind(std::string_view name) {
  for (ReservationKind k :
       {ReservationKind::kRun, ReservationKind::kManual, ReservationKind::kK8s}) {
    if (KindName(k) == name) return k;
  }
  return std::nullopt;
}

uint64_t ShareableMemory(uint64_t total_bytes) {
  if (total_bytes <= kShareMarginBytes) return 0;
  uint64_t left = total_bytes - kShareMarginBytes;
  return left - left % kShareStepBytes;
}

uint64_t RoundUpToShareStep(uint64_t bytes) {
  uint64_t rest = bytes % kShareStepBytes;
  return rest == 0 ? bytes : bytes + (kShareStepBytes - rest);
}

std::string DescribeClaim(const KubeClaimRef& claim) {
  std::string out = StrCat("claim ", claim.namespace_name, "/", claim.name);
  if (!claim.pod.empty()) out += StrCat(" (pod ", claim.pod, ")");
  return out;
}

std::string FormatProcessRefs(const std::vector<ProcessRef>& refs) {
  std::string out;
  for (const ProcessRef& r : refs) {
    if (!out.empty()) out += ' ';
    out += StrCat(r.pid, ":", r.start_ticks);
  }
  return out;
}

std::optional<std::vector<ProcessRef>> ParseProcessRefs(std::string_view text) {
  std::vector<ProcessRef> out;
  for (std::string_view item : Split(text, ' ', true)) {
    size_t colon = item.find(':');
    ProcessRef ref;
    if (colon == std::string_view::npos || !ParseInt(item.substr(0, colon), &ref.pid) ||
        !ParseInt(item.substr(colon + 1), &ref.start_ticks) || ref.pid <= 0) {
      return std::nullopt;
    }
    out.push_back(ref);
  }
  return out;
}

std::string_view ReasonName(ReleaseReason reason) {
  switch (reason) {
    case ReleaseReason::kReleased:
      return "released";
    case ReleaseReason::kExpired:
      return "expired";
    case ReleaseReason::kJobExited:
      return "job_exited";
    case ReleaseReason::kAdminReset:
      return "admin_reset";
    case ReleaseReason::kCancelled:
      return "cancelled";
  }
  return "released";
}

std::optional<ReleaseReason> ParseReason(std::string_view name) {
  for (ReleaseReason r :
       {ReleaseReason::kReleased, ReleaseReason::kExpired, ReleaseReason::kJobExited,
        ReleaseReason::kAdminReset, ReleaseReason::kCancelled}) {
    if (ReasonName(r) == name) return r;
  }
  return std::nullopt;
}

HistoryRecord EndReservation(const Reservation& r, TimePoint end, ReleaseReason reason) {
  std::string note = r.note;
  if (r.claim)
    note = note.empty() ? DescribeClaim(*r.claim) : StrCat(note, "; ", DescribeClaim(*r.claim));
  return HistoryRecord{.gpu = r.gpu,
                       .memory = r.memory,
                       .shareable = r.shareable,
                       .uid = r.uid,
                       .user = r.user,
                       .kind = r.kind,
                       .start = r.start,
                       .end = end,
                       .reason = reason,
                       .note = std::move(note)};
}

}  // namespace canhazgpu
