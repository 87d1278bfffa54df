#include "core/clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace canhazgpu {
namespace {

TEST(RealClockTest, WaitUntilReturnsWhetherTheConditionHeld) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread waker([&] {
    std::lock_guard lock(mu);
    done = true;
    cv.notify_all();
  });
  std::unique_lock lock(mu);
  // No deadline: only the condition ends it.
  EXPECT_TRUE(RealClock().WaitUntil(cv, lock, MonoTime::max(), [&] { return done; }));
  lock.unlock();
  waker.join();
  lock.lock();
  EXPECT_FALSE(RealClock().WaitFor(cv, lock, std::chrono::milliseconds(1), [] { return false; }));
}

TEST(RealClockTest, ADeadlineFarAwaySaturatesInsteadOfOverflowing) {
  EXPECT_EQ(RealClock().DeadlineAfter(std::chrono::nanoseconds::max()), MonoTime::max());
  EXPECT_GT(RealClock().DeadlineAfter(std::chrono::hours(1)), RealClock().MonoNow());
}

}  // namespace
}  // namespace canhazgpu
