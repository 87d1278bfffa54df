// libgit2's network sockets with limits it does not have itself. libgit2
// 1.5 (Debian 12) waits on a connect, a read and a write for as long as the
// kernel lets it: a server that sends a byte every few seconds held a fetch,
// and the cache worker running it, for as long as it liked. This module
// registers a socket stream of its own with libgit2 (git_stream_register,
// GIT_STREAM_STANDARD: plain http, git:// and ssh use it directly, and
// libgit2's TLS stream opens its socket through it), which waits in short
// slices and gives up:
//   - when the connect takes longer than `connect_timeout`;
//   - when fewer than `low_speed_bytes_per_second` x `low_speed_time` bytes
//     moved in either direction during `low_speed_time` (curl's low-speed
//     limit, which the Hugging Face downloads use too);
//   - at `deadline`, or when `*cancel` turns true.
// The limits are those of the calling thread (a fetch runs on one thread),
// set with ScopedTransferLimits; without one, TransferLimits' defaults hold.
//
// Thread safety: InstallGuardedSockets may be called from any thread, any
// number of times; each thread has its own limits and its own failure.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"

namespace canhazgpu::git {

struct TransferLimits {
  std::chrono::milliseconds connect_timeout{30'000};
  int64_t low_speed_bytes_per_second = 1;
  std::chrono::milliseconds low_speed_time{60'000};
  std::optional<std::chrono::steady_clock::time_point> deadline;
  const std::atomic<bool>* cancel = nullptr;
};

// Registers the stream with libgit2 (once per process; later calls do
// nothing). EnsureInitialized calls it.
void InstallGuardedSockets();

// Sets the calling thread's limits for its lifetime and clears the
// thread's last failure.
class ScopedTransferLimits {
 public:
  explicit ScopedTransferLimits(const TransferLimits& limits);
  ~ScopedTransferLimits();
  ScopedTransferLimits(const ScopedTransferLimits&) = delete;
  ScopedTransferLimits& operator=(const ScopedTransferLimits&) = delete;

  // Why a socket of this thread gave up since the scope began, if one did:
  // DeadlineExceeded (connect timeout, low speed, deadline) or Cancelled.
  std::optional<absl::Status> Failure() const;

 private:
  const TransferLimits* previous_;
};

}  // namespace canhazgpu::git
