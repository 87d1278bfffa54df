// CallsInFlight: counts the handlers of a gRPC server that are running, so
// that a stopping server can wait for its own work (prepares, health
// streams) and not for the connections the kubelet keeps open, which gRPC's
// own Shutdown waits its whole deadline for.
//
// Threading: thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>

#include "core/mutex.h"

namespace canhazgpu::kubeletplugin {

class CallsInFlight {
 public:
  // Counts one call for as long as it lives.
  class Scope {
   public:
    explicit Scope(CallsInFlight& calls) : calls_(calls) {
      MutexLock lock(calls_.mu_);
      ++calls_.running_;
    }
    ~Scope() {
      MutexLock lock(calls_.mu_);
      if (--calls_.running_ == 0) calls_.idle_.notify_all();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CallsInFlight& calls_;
  };

  // True when none is running any more; false when `timeout` passed first.
  bool WaitForNone(std::chrono::milliseconds timeout) {
    MutexLock lock(mu_);
    return idle_.wait_for(lock, timeout,
                          [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_ == 0; });
  }

 private:
  Mutex mu_;
  std::condition_variable_any idle_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace canhazgpu::kubeletplugin
