// One MPS control daemon per shared GPU, started from the host's NVIDIA
// driver and reference-counted by the GPU's shares (docs/sharing.md, "mps").
//
//   Acquire(share)  the first share of a GPU starts its daemon
//                   (`<driver root>/usr/bin/nvidia-cuda-mps-control -d` with
//                   CUDA_VISIBLE_DEVICES=<uuid> and the GPU's own pipe and log
//                   directories) and tells it the GPU's shareable memory as
//                   the default pinned limit; every share gets back the
//                   environment its processes need (share_limits.h).
//   Release(id)     after the GPU's last share, `quit`s the daemon and
//                   removes its directories.
//   Check()         restarts the daemon of a GPU that has shares and whose
//                   daemon died; stops and removes what a GPU without shares
//                   left. Acquire does the same for its GPU.
//   Recover(live)   after our own process was killed: the shares on disk
//                   become exactly `live`, then Check(): running daemons of
//                   GPUs with shares are adopted, the rest stopped and removed.
//
// The truth is on disk, so it outlives our process and several processes
// (each `canhazgpu run`, or a restarted node daemon) can share it:
//   <state_dir>/lock                      flock: one change at a time
//   <state_dir>/<uuid>/pipe/              CUDA_MPS_PIPE_DIRECTORY (the daemon
//                                         writes nvidia-cuda-mps-control.pid)
//   <state_dir>/<uuid>/log/               CUDA_MPS_LOG_DIRECTORY (control.log)
//   <state_dir>/<uuid>/shares/<share id>  "<share bytes> <shareable bytes>"
// GPUs are keyed by UUID, never by index. Daemons run as the caller's user;
// MPS sockets live in the pipe directory, so keep state_dir short (a unix
// socket path has at most 107 bytes). Errors are one line naming the GPU and
// the cause. Thread-safe: every call takes the lock file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock.h"
#include "host/process_table.h"
#include "mps/control_program.h"

namespace canhazgpu::mps {

struct MpsOptions {
  // The host driver's root: the control program is
  // <driver_root>/usr/bin/nvidia-cuda-mps-control.
  std::string driver_root = "/";
  // Where the daemons' directories and the share records live.
  std::string state_dir;
  // The longest one call of the control program may take, and the longest a
  // daemon told to quit may take to exit before it is killed.
  Duration timeout = std::chrono::seconds(10);
  // Given to every run of the control program besides our own environment:
  // where the driver root is not "/" (a node daemon's container), the
  // program needs the driver's libraries, e.g. LD_LIBRARY_PATH.
  std::vector<EnvVar> extra_env;
};

// One share of a GPU's memory.
struct MpsShare {
  std::string gpu_uuid;
  std::string share_id;          // unique across GPUs
  uint64_t share_bytes = 0;      // at least 1 MiB
  uint64_t shareable_bytes = 0;  // the GPU's total less the driver's margin
};

class MpsDaemons {
 public:
  MpsDaemons(MpsOptions options, const host::ProcessTable& processes, const Clock& clock);

  // Records the share and makes sure its GPU's daemon runs; returns the
  // environment for the share's processes. Acquiring a share id again on
  // the same GPU returns the same environment (a retried prepare); on
  // another GPU it is FailedPrecondition. Nothing changes on an error.
  absl::StatusOr<std::vector<EnvVar>> Acquire(const MpsShare& share);

  // Forgets the share; after the GPU's last share its daemon is stopped
  // and its directories removed. NotFound for a share that is not recorded.
  absl::Status Release(std::string_view share_id);

  // Restarts dead daemons of GPUs with shares; stops and removes those of
  // GPUs without. The first error, naming its GPU; the other GPUs are still
  // done.
  absl::Status Check();

  // Makes the recorded shares exactly `live`, then Check(). Bad input
  // changes nothing.
  absl::Status Recover(const std::vector<MpsShare>& live);

  // The pid of the GPU's running control daemon; nullopt when none runs.
  std::optional<int64_t> DaemonPid(std::string_view gpu_uuid) const;

  // The GPUs (UUIDs, sorted) that have a directory under the state
  // directory: a daemon, shares, or what a killed process left.
  std::vector<std::string> GpusOnDisk() const;

  // The share ids recorded for the GPU, sorted.
  std::vector<std::string> Shares(std::string_view gpu_uuid) const;

  // The GPU's pipe directory (its CUDA_MPS_PIPE_DIRECTORY).
  std::string PipeDir(std::string_view gpu_uuid) const;

 private:
  std::string GpuDir(std::string_view gpu_uuid) const;
  std::string LogDir(std::string_view gpu_uuid) const;
  std::string SharesDir(std::string_view gpu_uuid) const;
  std::optional<MpsShare> ReadShare(std::string_view gpu_uuid, std::string_view share_id) const;
  absl::StatusOr<std::string> FindShareGpu(std::string_view share_id) const;
  absl::Status WriteShare(const MpsShare& share) const;

  // Starts the GPU's daemon unless it runs; tells it the default limit.
  absl::Status EnsureDaemon(std::string_view gpu_uuid, uint64_t shareable_bytes) const;
  absl::Status StartDaemon(std::string_view gpu_uuid, uint64_t shareable_bytes) const;
  absl::StatusOr<int64_t> WaitForPidFile(std::string_view gpu_uuid) const;
  // Quits (or kills) the GPU's daemon and removes its directories.
  absl::Status StopAndRemove(std::string_view gpu_uuid) const;
  absl::Status CheckGpu(std::string_view gpu_uuid) const;
  bool WaitGone(int64_t pid) const;
  absl::StatusOr<ControlResult> Tell(std::string_view gpu_uuid, const std::string& commands) const;

  MpsOptions options_;
  const host::ProcessTable& processes_;
  const Clock& clock_;
};

}  // namespace canhazgpu::mps
