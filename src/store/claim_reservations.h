// GPUs prepared for Kubernetes ResourceClaims, as reservations of kind k8s in
// the host store: the one node-local truth that `canhazgpu status` shows and
// that local users cannot take. k8shazgpu-node calls these from its
// prepare/unprepare; the store knows of Kubernetes only the plain
// KubeClaimRef.
//
// Each function is one store transaction. A local reserve and a prepare
// racing for one GPU are serialised by it, and the reservations table is keyed
// by (GPU, share): exactly one of them gets the GPU, or the memory that is
// left of it (ADR 0018: host shares and pod shares never add up to more than
// the GPU).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/reservation.h"
#include "store/state_store.h"

namespace canhazgpu::store {

// One GPU a claim was allocated: whole, or a share of its memory.
struct ClaimGpu {
  int gpu = 0;
  uint64_t memory = 0;     // a share's bytes; 0: the whole GPU
  std::string share;       // the allocation's shareID; "" for the whole GPU
  uint64_t shareable = 0;  // a share's GPU's shareable bytes
};

// Reserves `gpus` for `claim`, all or nothing. `user` is the pod's
// canhazgpu.dev/user label ("" when it has none: "k8s:<namespace>" is
// recorded), `uid` that user's uid where the driver resolved it, else 0
// (informational only: no local command may end a k8s reservation).
//
// GPUs already held for the same claim (by uid) are kept as they are, so a
// repeated prepare succeeds. A manual reservation whose time is up is ended
// first (history: expired), as any canhazgpu command would. Errors:
//  - InvalidArgument: no GPUs, a GPU twice, a claim without uid, namespace
//    or name;
//  - FailedPrecondition: the pool is not initialized, or a GPU is held by
//    someone else, every such GPU named with its holder:
//    "gpu 3: reserved by alice (manual) since 2026-01-02T10:02:00Z";
//  - NotFound: a GPU outside the pool.
// A run reservation whose job has died still blocks until a canhazgpu
// command (which can see processes) reaps it; the kubelet retries.
absl::Status ReserveForClaim(StateStore& store, const std::vector<int>& gpus,
                             const KubeClaimRef& claim, const std::string& user, uint32_t uid,
                             TimePoint now);
// The same for GPUs and shares: a share is refused (FailedPrecondition) when
// the GPU is held whole, or when its memory does not fit beside the GPU's
// other shares, naming every holder and what is left; a whole GPU while it
// has shares, naming each. A GPU may appear once per share.
absl::Status ReserveClaimGpus(StateStore& store, const std::vector<ClaimGpu>& gpus,
                              const KubeClaimRef& claim, const std::string& user, uint32_t uid,
                              TimePoint now);

// What RestoreClaim found.
struct ClaimRestore {
  std::vector<int> restored;           // reserved for the claim again
  std::vector<std::string> conflicts;  // "gpu 3: reserved by alice (manual) since ..."
};

// Puts back the reservations of a claim that is still prepared (its pod
// runs on `gpus`) but that the store lost: `canhazgpu admin --force
// --drop-pod-reservations`, or a state file deleted and created again. Unlike
// ReserveForClaim it is not all or nothing: each GPU free is reserved for
// the claim again, GPUs it still holds are kept, and each GPU held by
// someone else (a local user who took it meanwhile) or no longer in the pool
// is left as it is and named in `conflicts`, for the driver to report. One
// transaction. Errors: InvalidArgument as ReserveForClaim; FailedPrecondition
// when the pool is not initialized.
absl::StatusOr<ClaimRestore> RestoreClaim(StateStore& store, const std::vector<int>& gpus,
                                          const KubeClaimRef& claim, const std::string& user,
                                          TimePoint now);
absl::StatusOr<ClaimRestore> RestoreClaimGpus(StateStore& store, const std::vector<ClaimGpu>& gpus,
                                              const KubeClaimRef& claim, const std::string& user,
                                              TimePoint now);

// Ends every reservation of the claim `claim_uid` (history: released). OK
// when it holds none, so a repeated unprepare succeeds.
absl::Status ReleaseClaim(StateStore& store, const std::string& claim_uid, TimePoint now);

// Every k8s reservation, ordered by GPU: what the driver reconciles its
// checkpoint against when it starts.
absl::StatusOr<std::vector<Reservation>> ListClaimReservations(StateStore& store);

}  // namespace canhazgpu::store
