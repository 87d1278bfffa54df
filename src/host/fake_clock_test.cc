#include "host/testing/fake_clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace canhazgpu::host {
namespace {

TEST(FakeClockTest, SleepingMovesBothClocksAndSettingTheWallClockMovesOnlyIt) {
  FakeClock clock;
  const TimePoint wall = clock.Now();
  const MonoTime mono = clock.MonoNow();
  clock.SleepFor(std::chrono::seconds(90));
  EXPECT_EQ(clock.Now() - wall, std::chrono::seconds(90));
  EXPECT_EQ(clock.MonoNow() - mono, std::chrono::seconds(90));
  clock.Set(wall - std::chrono::hours(1));  // someone set the machine's time back
  EXPECT_EQ(clock.Now(), wall - std::chrono::hours(1));
  EXPECT_EQ(clock.MonoNow() - mono, std::chrono::seconds(90));
}

TEST(FakeClockTest, AWaitEndsWhenAnotherThreadMovesTimePastItsDeadline) {
  FakeClock clock;
  Mutex mu;
  std::condition_variable_any cv;
  const MonoTime deadline = clock.MonoNow() + std::chrono::minutes(5);
  std::thread sleeper([&] { clock.SleepFor(std::chrono::minutes(5)); });
  MutexLock lock(mu);
  EXPECT_FALSE(clock.WaitUntil(cv, lock, deadline, [] { return false; }));
  EXPECT_GE(clock.MonoNow(), deadline);
  sleeper.join();
}

TEST(FakeClockTest, AWaitEndsWhenItsConditionHolds) {
  FakeClock clock;
  Mutex mu;
  std::condition_variable_any cv;
  bool done = false;
  std::thread waker([&] {
    MutexLock lock(mu);
    done = true;
    cv.notify_all();
  });
  MutexLock lock(mu);
  EXPECT_TRUE(clock.WaitFor(cv, lock, std::chrono::hours(1), [&] { return done; }));
  lock.Unlock();
  waker.join();
}

}  // namespace
}  // namespace canhazgpu::host
