#include "store/claim_reservations.h"

#include <algorithm>

#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "store/share_check.h"

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

std::string DescribePart(const Reservation& r) {
  if (!r.IsShare()) return DescribeHolder(r);
  return StrCat(DescribeHolder(r), " (a share of ", FormatBytes(r.memory), ")");
}

absl::Status CheckRequest(const std::vector<ClaimGpu>& gpus, const KubeClaimRef& claim) {
  if (claim.uid.empty() || claim.namespace_name.empty() || claim.name.empty()) {
    return absl::InvalidArgumentError(StrCat("claim '", claim.namespace_name, "/", claim.name,
                                             "' (uid '", claim.uid,
                                             "'): a claim needs a uid, a namespace and a name"));
  }
  if (gpus.empty()) {
    return absl::InvalidArgumentError(StrCat(DescribeClaim(claim), ": no GPUs to reserve"));
  }
  std::vector<std::pair<int, std::string>> sorted;
  for (const ClaimGpu& g : gpus) {
    if (g.gpu < 0) return absl::InvalidArgumentError(StrCat("gpu id ", g.gpu, " < 0"));
    if (g.memory > 0 && (g.share.empty() || g.shareable == 0)) {
      return absl::InvalidArgumentError(StrCat(DescribeClaim(claim), ": the share of gpu ", g.gpu,
                                               " needs an id and the GPU's shareable memory"));
    }
    sorted.emplace_back(g.gpu, g.memory > 0 ? g.share : "");
  }
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i) {
    // The same share twice, or the whole GPU beside anything else of it.
    if (sorted[i].first == sorted[i - 1].first &&
        (sorted[i] == sorted[i - 1] || sorted[i].second.empty() || sorted[i - 1].second.empty())) {
      return absl::InvalidArgumentError(
          StrCat(DescribeClaim(claim), ": gpu ", sorted[i].first, " requested twice"));
    }
  }
  return absl::OkStatus();
}

// Where each of `gpus` stands for `claim` inside `txn`.
struct Placement {
  std::vector<ClaimGpu> free;          // to reserve (expired manual reservations were ended)
  std::vector<std::string> conflicts;  // "gpu 3: reserved by alice (manual) since ..."
  std::vector<int> outside;            // not in the pool
  int pool_size = 0;
};

// Why `want` cannot have its GPU beside `others` (the GPU's other live
// reservations); "" when it can.
std::string ConflictOf(const ClaimGpu& want, const std::vector<const Reservation*>& others) {
  if (others.empty()) return "";
  std::vector<std::string> holders;
  uint64_t used = 0;
  uint64_t limit = want.shareable;
  bool whole = false;
  for (const Reservation* r : others) {
    holders.push_back(DescribePart(*r));
    whole = whole || !r->IsShare();
    used += r->memory;
    if (r->IsShare()) limit = std::min(limit, r->shareable);
  }
  if (want.memory == 0) {
    // Whole: every holder named, so the pod's owner sees who to wait for.
    return StrCat("gpu ", want.gpu, ": ", Join(holders, "; "));
  }
  if (whole) return StrCat("gpu ", want.gpu, ": ", holders.front());
  if (used + want.memory <= limit) return "";
  return StrCat("gpu ", want.gpu, ": a share of ", FormatBytes(want.memory), " does not fit, only ",
                FormatBytes(used >= limit ? 0 : limit - used), " of ", FormatBytes(limit),
                " left to share (", Join(holders, "; "), ")");
}

absl::StatusOr<Placement> Place(StateTransaction& txn, const std::vector<ClaimGpu>& gpus,
                                const KubeClaimRef& claim, TimePoint now) {
  ASSIGN_OR_RETURN(std::optional<PoolConfig> pool, txn.GetPool());
  if (!pool) {
    return absl::FailedPreconditionError(
        "GPU pool not initialized: run 'canhazgpu admin' on the node");
  }
  Placement out{.pool_size = pool->gpu_count};
  ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
  std::vector<bool> ended(reservations.size(), false);
  for (const ClaimGpu& want : gpus) {
    if (want.gpu >= pool->gpu_count) {
      out.outside.push_back(want.gpu);
      continue;
    }
    bool ours = false;
    std::vector<const Reservation*> others;
    for (size_t i = 0; i < reservations.size(); ++i) {
      const Reservation& held = reservations[i];
      if (held.gpu != want.gpu || ended[i]) continue;
      if (held.claim && held.claim->uid == claim.uid) {
        // Prepared before: kept as it is. The claim's other shares of the
        // GPU are its own and count like anyone's.
        if (held.share == (want.memory > 0 ? want.share : "")) {
          ours = true;
        } else {
          others.push_back(&held);
        }
      } else if (held.expires && now >= *held.expires) {
        // Stale: ended as ReapStale would, so a GPU status shows free is free.
        RETURN_IF_ERROR(txn.DeleteReservation(held.gpu, held.share));
        RETURN_IF_ERROR(txn.AppendHistory(EndReservation(held, now, ReleaseReason::kExpired)));
        ended[i] = true;
      } else {
        others.push_back(&held);
      }
    }
    if (ours) continue;
    if (std::string conflict = ConflictOf(want, others); !conflict.empty()) {
      out.conflicts.push_back(std::move(conflict));
    } else {
      out.free.push_back(want);
    }
  }
  return out;
}

absl::Status InsertForClaim(StateTransaction& txn, const std::vector<ClaimGpu>& gpus,
                            const KubeClaimRef& claim, const std::string& user, uint32_t uid,
                            TimePoint now) {
  for (const ClaimGpu& g : gpus) {
    const bool share = g.memory > 0;
    RETURN_IF_ERROR(txn.InsertReservation(
        Reservation{.gpu = g.gpu,
                    .memory = g.memory,
                    .share = share ? g.share : "",
                    .shareable = share ? g.shareable : 0,
                    .uid = uid,
                    .user = user.empty() ? StrCat("k8s:", claim.namespace_name) : user,
                    .kind = ReservationKind::kK8s,
                    .start = now,
                    .claim = claim}));
  }
  return absl::OkStatus();
}

std::vector<ClaimGpu> WholeGpus(const std::vector<int>& gpus) {
  std::vector<ClaimGpu> out;
  for (int gpu : gpus) out.push_back({.gpu = gpu});
  return out;
}

std::vector<ClaimGpu> SortedByGpu(std::vector<ClaimGpu> gpus) {
  std::stable_sort(gpus.begin(), gpus.end(),
                   [](const ClaimGpu& a, const ClaimGpu& b) { return a.gpu < b.gpu; });
  return gpus;
}

}  // namespace

absl::Status ReserveForClaim(StateStore& store, const std::vector<int>& gpus,
                             const KubeClaimRef& claim, const std::string& user, uint32_t uid,
                             TimePoint now) {
  return ReserveClaimGpus(store, WholeGpus(gpus), claim, user, uid, now);
}

absl::Status ReserveClaimGpus(StateStore& store, const std::vector<ClaimGpu>& gpus,
                              const KubeClaimRef& claim, const std::string& user, uint32_t uid,
                              TimePoint now) {
  RETURN_IF_ERROR(CheckRequest(gpus, claim));
  const std::vector<ClaimGpu> sorted = SortedByGpu(gpus);
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
  return RestoreClaimGpus(store, WholeGpus(gpus), claim, user, now);
}

absl::StatusOr<ClaimRestore> RestoreClaimGpus(StateStore& store, const std::vector<ClaimGpu>& gpus,
                                              const KubeClaimRef& claim, const std::string& user,
                                              TimePoint now) {
  RETURN_IF_ERROR(CheckRequest(gpus, claim));
  const std::vector<ClaimGpu> sorted = SortedByGpu(gpus);
  ClaimRestore out;
  RETURN_IF_ERROR(store.Update([&](StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(Placement placed, Place(txn, sorted, claim, now));
    for (const ClaimGpu& g : placed.free) out.restored.push_back(g.gpu);
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
