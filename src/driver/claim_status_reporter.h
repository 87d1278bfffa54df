// Keeps prepared claims' status.devices saying what the node prepared
// (claim_device_status.h), from a thread of its own: a prepare never waits
// for it, and an API server that is slow, refuses or is down never fails
// one. The daemon hands over what every completed claim should carry after
// each prepare and unprepare and at each resync; the reporter writes what
// changed since its last successful write of that claim: entries for a
// newly prepared claim, none for one no longer prepared. A write that fails
// is logged and tried again after `retry` (the daemon's resync period), or
// at once by RetryNow(). What was written is kept in memory only: after a
// restart every prepared claim is read once again (and written when it
// differs), while the entries of a claim unprepared while the daemon was
// down stay until the claim goes — best effort, as the claim usually goes
// with its pod. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "core/clock.h"
#include "core/log.h"
#include "core/mutex.h"
#include "driver/claim_device_status.h"
#include "kube/client.h"

namespace canhazgpu::driver {

struct ClaimStatusOptions {
  std::string driver = "gpu.canhazgpu.dev";
  std::string pool;  // the node's name
  std::chrono::milliseconds retry{30'000};
  Log log;
};

class ClaimStatusReporter {
 public:
  // `client` and `clock` (conditions' times) must outlive the reporter.
  ClaimStatusReporter(kube::Client& client, ClaimStatusOptions options, const Clock& clock);
  ~ClaimStatusReporter();
  ClaimStatusReporter(const ClaimStatusReporter&) = delete;
  ClaimStatusReporter& operator=(const ClaimStatusReporter&) = delete;

  // What each prepared claim (by uid) should carry now; a claim written
  // before and missing here gets its entries removed. Returns at once.
  void Set(std::map<std::string, DesiredClaimStatus> desired);
  // Writes the claims whose last write failed now, not at their retry time.
  void RetryNow();
  // Waits until every claim was written as Set last asked, or failed and
  // waits for its retry; false on timeout (tests).
  bool Settled(std::chrono::milliseconds timeout);
  // Ends the thread (a write under way finishes first).
  void Stop();

  int64_t failures() const;

 private:
  struct Work {
    std::string uid;
    DesiredClaimStatus target;
  };
  // The next claim to write, if any is due now; else when one will be.
  std::optional<Work> NextLocked(std::chrono::steady_clock::time_point* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `uid`'s entries differ from what was last written of it.
  bool NeedsWriteLocked(const std::string& uid, const DesiredClaimStatus& want) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether any claim waits for a write that is due (not for its retry).
  bool PendingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run();

  kube::Client& client_;
  const ClaimStatusOptions options_;
  const Clock& clock_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::string, DesiredClaimStatus> desired_ ABSL_GUARDED_BY(mu_);
  // As last written; a claim whose entries were removed is not here.
  std::map<std::string, DesiredClaimStatus> written_ ABSL_GUARDED_BY(mu_);
  // Claims whose last write failed: not before this time.
  std::map<std::string, std::chrono::steady_clock::time_point> retry_at_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace canhazgpu::driver
