#include "core/clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace canhazgpu {
namespace {

TEST(RealClockTest, WaitUntilReturnsWhetherTheConditionHeld) {
  Mutex mu;
  std::condition_variable_any cv;
  bool done = false;
  std::thread waker([&] {
    MutexLock lock(mu);
    done = true;
    cv.notify_all();
  });
  MutexLock lock(mu);
  // No deadline: only the condition ends it.
  EXPECT_TRUE(RealClock().WaitUntil(cv, lock, MonoTime::max(), [&] { return done; }));
  lock.Unlock();
  waker.join();
  lock.Lock();
  EXPECT_FALSE(RealClock().WaitFor(cv, lock, std::chrono::milliseconds(1), [] { return false; }));
}

TEST(RealClockTest, ADeadlineFarAwaySaturatesInsteadOfOverflowing) {
  EXPECT_EQ(RealClock().DeadlineAfter(std::chrono::nanoseconds::max()), MonoTime::max());
  EXPECT_GT(RealClock().DeadlineAfter(std::chrono::hours(1)), RealClock().MonoNow());
}

}  // namespace
}  // namespace canhazgpu
