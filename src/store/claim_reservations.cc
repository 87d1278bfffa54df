#include "store/claim_reservations.h"

#include <algorithm>

#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::store {
namespace {

// "reserved by alice (manual) since 2026-01-02T10:02:00Z".
std::string DescribeHolder(const Reservation& r) {
  if (r.queue_id) return StrCat("held for a request of ", r.user, " waiting in the queue");
  const std::string since = StrCat(" since ", FormatTimestampSeconds(r.start));
  if (r.claim) return StrCat("reserved for Kubernetes ", DescribeClaim(*r.claim), since);
  std::string what = StrCat("reserved by ", r.user, " (", KindName(r.kind));
  if (r.process) what += StrCat(", pid ", r.process->pid);
  return StrCat(what, ")", since);
}

absl::Status CheckRequest(const std::vector<int>& gpus, const KubeClaimRef& claim) {
  if (claim.uid.empty() || claim.namespace_name.empty() || claim.name.empty()) {
    return absl::InvalidArgumentError(StrCat("claim '", claim.namespace_name, "/", claim.name,
                                             "' (uid '", claim.uid,
                                             "'): a claim needs a uid, a namespace and a name"));
  }
  if (gpus.empty()) {
    return absl::InvalidArgumentError(StrCat(DescribeClaim(claim), ": no GPUs to reserve"));
  }
  std::vector<int> sorted = gpus;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0) return absl::InvalidArgumentError(StrCat("gpu id ", sorted[i], " < 0"));
    if (i > 0 && sorted[i] == sorted[i - 1]) {
      return absl::InvalidArgumentError(
          StrCat(DescribeClaim(claim), ": gpu ", sorted[i], " requested twice"));
    }
  }
  return absl::OkStatus();
}

// Where each of `gpus` (sorted) stands for `claim` inside `txn`.
struct Placement {
  std::vector<int> free;               // to reserve (expired manual reservations were ended)
  std::vector<std::string> conflicts;  // "gpu 3: reserved by alice (manual) since ..."
  std::vector<int> outside;            // not in the pool
  int pool_size = 0;
};

absl::StatusOr<Placement> Place(StateTransaction& txn, const std::vector<int>& gpus,
                                const KubeClaimRef& claim, TimePoint now) {
  ASSIGN_OR_RETURN(std::optional<PoolConfig> pool, txn.GetPool());
  if (!pool) {
    return absl::FailedPreconditionError(
        "GPU pool not initialized: run 'canhazgpu admin' on the node");
  }
  Placement out{.pool_size = pool->gpu_count};
  ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
  for (int gpu : gpus) {
    if (gpu >= pool->gpu_count) {
      out.outside.push_back(gpu);
      continue;
    }
    // Whole or shared (ADR 0018): every reservation of the GPU counts.
    bool ours = false;
    std::string conflict;
    for (const Reservation& held : reservations) {
      if (held.gpu != gpu) continue;
      if (held.claim && held.claim->uid == claim.uid) {
        ours = true;  // prepared before: kept as it is
      } else if (held.expires && now >= *held.expires) {
        // Stale: ended as ReapStale would, so a GPU status shows free is free.
        RETURN_IF_ERROR(txn.DeleteReservation(gpu, held.share));
        RETURN_IF_ERROR(txn.AppendHistory(EndReservation(held, now, ReleaseReason::kExpired)));
      } else if (conflict.empty()) {
        conflict = StrCat("gpu ", gpu, ": ", DescribeHolder(held));
      }
    }
    if (!conflict.empty()) {
      out.conflicts.push_back(std::move(conflict));
    } else if (!ours) {
      out.free.push_back(gpu);
    }
  }
  return out;
}

absl::Status InsertForClaim(StateTransaction& txn, const std::vector<int>& gpus,
                            const KubeClaimRef& claim, const std::string& user, uint32_t uid,
                            TimePoint now) {
  for (int gpu : gpus) {
    RETURN_IF_ERROR(txn.InsertReservation(
        Reservation{.gpu = gpu,
                    .uid = uid,
                    .user = user.empty() ? StrCat("k8s:", claim.namespace_name) : user,
                    .kind = ReservationKind::kK8s,
                    .start = now,
                    .claim = claim}));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ReserveForClaim(StateStore& store, const std::vector<int>& gpus,
                             const KubeClaimRef& claim, const std::string& user, uint32_t uid,
                             TimePoint now) {
  RETURN_IF_ERROR(CheckRequest(gpus, claim));
  std::vector<int> sorted = gpus;
  std::sort(sorted.begin(), sorted.end());
  return store.Update([&](StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(Placement placed, Place(txn, sorted, claim, now));
    if (!placed.outside.empty()) {
      return absl::NotFoundError(StrCat("gpu ", placed.outside.front(),
                                        ": not in this host's pool of ", placed.pool_size,
                                        " GPUs"));
    }
    if (!placed.conflicts.empty()) {
      return absl::FailedPreconditionError(StrCat(
          Join(placed.conflicts, "; "), " (wanted for Kubernetes ", DescribeClaim(claim), ")"));
    }
    return InsertForClaim(txn, placed.free, claim, user, uid, now);
  });
}

absl::StatusOr<ClaimRestore> RestoreClaim(StateStore& store, const std::vector<int>& gpus,
                                          const KubeClaimRef& claim, const std::string& user,
                                          TimePoint now) {
  RETURN_IF_ERROR(CheckRequest(gpus, claim));
  std::vector<int> sorted = gpus;
  std::sort(sorted.begin(), sorted.end());
  ClaimRestore out;
  RETURN_IF_ERROR(store.Update([&](StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(Placement placed, Place(txn, sorted, claim, now));
    out.restored = placed.free;
    out.conflicts = std::move(placed.conflicts);
    for (int gpu : placed.outside) {
      out.conflicts.push_back(
          StrCat("gpu ", gpu, ": not in this host's pool of ", placed.pool_size, " GPUs"));
    }
    // Whatever else holds the others, these are the claim's again.
    return InsertForClaim(txn, placed.free, claim, user, /*uid=*/0, now);
  }));
  return out;
}

absl::Status ReleaseClaim(StateStore& store, const std::string& claim_uid, TimePoint now) {
  if (claim_uid.empty()) return absl::InvalidArgumentError("release of a claim without a uid");
  return store.Update([&](StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
    for (const Reservation& r : reservations) {
      if (!r.claim || r.claim->uid != claim_uid) continue;
      RETURN_IF_ERROR(txn.DeleteReservation(r.gpu, r.share));
      RETURN_IF_ERROR(txn.AppendHistory(EndReservation(r, now, ReleaseReason::kReleased)));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<Reservation>> ListClaimReservations(StateStore& store) {
  std::vector<Reservation> out;
  RETURN_IF_ERROR(store.Read([&](StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
    for (Reservation& r : reservations) {
      if (r.kind == ReservationKind::kK8s) out.push_back(std::move(r));
    }
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace canhazgpu::store
