#include "core/mutex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <thread>
#include <vector>

namespace canhazgpu {
namespace {

// The way our classes use it: members guarded by the mutex, waits on a
// std::condition_variable_any.
class Counter {
 public:
  void Add() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    ++count_;
    changed_.notify_all();
  }
  int WaitFor(int at_least) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    changed_.wait(lock, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ >= at_least; });
    return count_;
  }
  bool WaitFor(int at_least, std::chrono::milliseconds timeout) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    return changed_.wait_for(
        lock, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ >= at_least; });
  }
  int count() const ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    return count_;
  }

 private:
  mutable Mutex mu_;
  std::condition_variable_any changed_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST(MutexTest, ThreadsAddingUnderTheLockLoseNoUpdate) {
  Counter counter;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) counter.Add();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter.count(), 4000);
}

TEST(MutexTest, AConditionVariableWaitsOnTheLockUntilThePredicateHolds) {
  Counter counter;
  std::thread adder([&] {
    for (int i = 0; i < 3; ++i) counter.Add();
  });
  EXPECT_GE(counter.WaitFor(3), 3);
  adder.join();
}

TEST(MutexTest, AWaitWithATimeoutReturnsFalseWhenNothingChanges) {
  Counter counter;
  EXPECT_FALSE(counter.WaitFor(1, std::chrono::milliseconds(1)));
  counter.Add();
  EXPECT_TRUE(counter.WaitFor(1, std::chrono::milliseconds(1)));
}

TEST(MutexLockTest, UnlockLetsAnotherThreadInAndLockTakesItBack) {
  Mutex mu;
  int value = 0;
  MutexLock lock(mu);
  lock.Unlock();
  std::thread other([&] {
    MutexLock inner(mu);
    value = 1;
  });
  other.join();
  lock.Lock();
  EXPECT_EQ(value, 1);
}

TEST(MutexLockTest, ADestroyedLockThatWasUnlockedLeavesTheMutexFree) {
  Mutex mu;
  {
    MutexLock lock(mu);
    lock.Unlock();
  }
  // Neither held nor unlocked twice: it can be taken again.
  mu.Lock();
  mu.Unlock();
}

TEST(MutexTest, IsBasicLockable) {
  Mutex mu;
  { std::scoped_lock lock(mu); }
  MutexLock again(mu);  // the scoped_lock let it go
}

}  // namespace
}  // namespace canhazgpu
