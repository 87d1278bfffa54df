// The one mutex of our code: a std::mutex that clang's thread-safety
// analysis (-Wthread-safety, on in every clang build) can see, so a comment
// like "guarded by mu_" becomes ABSL_GUARDED_BY(mu_) and the compiler checks
// it. libstdc++'s std::mutex and its locks carry no annotations.
//
//   Mutex mu_;
//   int count_ ABSL_GUARDED_BY(mu_) = 0;
//   std::condition_variable_any changed_;
//
//   MutexLock lock(mu_);
//   changed_.wait(lock, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ > 0; });
//
// Why not absl::Mutex: our waits are std::condition_variable waits with a
// predicate, and Clock::WaitUntil (with FakeClock's simulated time) takes
// one; absl::CondVar has no predicates and waits on absl::Time, so each wait
// loop would be rewritten. With this wrapper they stay as they were, on
// std::condition_variable_any (wait, wait_for, notify_one, notify_all).
#pragma once

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace canhazgpu {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

  // BasicLockable, for code written against the standard's names.
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { Lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { Unlock(); }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope, as std::unique_lock does: Unlock() and Lock()
// let go of it around a slow call and take it back, and the destructor lets
// go only if held. A std::condition_variable_any waits on it through the
// lowercase lock() and unlock().
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_.Lock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  ~MutexLock() ABSL_UNLOCK_FUNCTION() {
    if (held_) mu_.Unlock();
  }

  void Unlock() ABSL_UNLOCK_FUNCTION() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mu_.Lock();
    held_ = true;
  }

  // BasicLockable, for std::condition_variable_any.
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { Lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { Unlock(); }

 private:
  Mutex& mu_;
  bool held_ = true;
};

}  // namespace canhazgpu
