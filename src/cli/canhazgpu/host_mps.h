// A user's MPS control daemons on a host (docs/sharing.md, "On a host";
// ADR 0018, addendum): `canhazgpu run --gpu-mem` runs its job under one MPS
// control daemon per (GPU, user).
//
// Why per user: a control daemon serves one user at a time (another user's
// clients wait until the first user's have all ended), and a daemon started
// by an unprivileged user cannot serve anyone else. So each user's jobs
// share that user's daemon of a GPU, and different users' daemons of one GPU
// run side by side, their servers taking turns on the GPU as any two CUDA
// contexts do.
//
// Each user's state (mps::MpsDaemons) lives in <mps-dir>/canhazgpu-mps-<uid>,
// a short path (MPS puts unix sockets in it), created 0700; a directory of
// that name that is a symlink or someone else's is refused, never used.
// Beside MpsDaemons' own lock, `jobs.lock` serialises this user's acquires,
// releases and recoveries across processes, so a recovery never drops a
// share that a run is acquiring, nor brings back one a run just released.
//
// Crash safety: a wrapper SIGKILLed during its job leaves its share on disk
// and its daemon running. Any later command of the same user (run, reserve,
// release, status) calls RecoverOwnMps: the shares on disk whose run
// reservation is gone from the store (reaped as stale) are dropped, and a
// GPU without shares has its daemon stopped. Thread-compatible.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/reservations.h"
#include "cli/canhazgpu/context.h"
#include "core/reservation.h"
#include "mps/mps_daemons.h"
#include "store/state_store.h"

namespace canhazgpu::cli {

// "<parent>/canhazgpu-mps-<uid>".
std::string UserMpsDir(const std::string& parent, uint32_t uid);

// Makes `dir` a private directory of `owner`: created 0700 when missing; one
// already there must be a real directory (not a symlink) owned by `owner`,
// and loses any group or other permission. FailedPrecondition naming the
// path and what is wrong otherwise; nothing is changed then.
absl::Status PrepareUserMpsDir(const std::string& dir, uid_t owner);

// The MPS shares a recovery keeps: those on disk (`on_disk`: GPU UUID ->
// share ids) that are still a run reservation of `uid` in `reservations`,
// with the sizes the store has for them.
std::vector<mps::MpsShare> SurvivingShares(
    const std::vector<Reservation>& reservations, uint32_t uid,
    const std::map<std::string, std::vector<std::string>>& on_disk);

class HostMps {
 public:
  // The caller's daemons. With `create`, the user's directory is made when
  // missing; without, a missing directory is NotFound (nothing to recover).
  static absl::StatusOr<std::unique_ptr<HostMps>> Open(const HostSharing& sharing, uint32_t uid,
                                                       const alloc::Machine& machine, bool create);

  // The share's environment, starting the GPU's daemon for its first share.
  absl::StatusOr<std::vector<mps::EnvVar>> Acquire(const mps::MpsShare& share);
  // Forgets the share, stopping the daemon after its GPU's last; a share
  // not recorded (a recovery dropped it) is no error.
  absl::Status Release(const std::string& share_id);
  // Drops the shares on disk whose run reservation the store no longer
  // has (after reaping what is stale), then restarts dead daemons of GPUs
  // with shares and stops the others. Nothing to do: no store access.
  absl::Status Recover(store::StateStore& store, uint32_t uid, const alloc::Machine& machine);

  const std::string& dir() const { return dir_; }

 private:
  HostMps(std::string dir, mps::MpsOptions options, const alloc::Machine& machine)
      : dir_(std::move(dir)), daemons_(std::move(options), machine.processes, machine.clock) {}

  std::string dir_;
  mps::MpsDaemons daemons_;
};

// For any command of a user: recovers that user's daemons when the user has
// an MPS directory. Best effort: a failure is one warning line on stderr.
void RecoverOwnMps(const Context& ctx, store::StateStore& store);

}  // namespace canhazgpu::cli
