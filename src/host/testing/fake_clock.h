// A Clock that only moves when a test says so, or when code sleeps on it:
// SleepFor(d) returns at once with the time d later, so a test sees what a
// retry loop slept in Now() without waiting for it. WaitUntil returns when
// the condition holds or when the time, moved by the test or by another
// thread's sleep, reaches the deadline. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>

#include "core/clock.h"

namespace canhazgpu::host {

class FakeClock : public Clock {
 public:
  explicit FakeClock(TimePoint start = FromEpochMillis(1'790'000'000'000))
      : wall_ns_(start.time_since_epoch().count()) {}

  TimePoint Now() const override { return TimePoint(TimePoint::duration(wall_ns_.load())); }
  MonoTime MonoNow() const override { return MonoTime(MonoTime::duration(mono_ns_.load())); }
  void SleepFor(std::chrono::nanoseconds d) const override {
    if (d.count() > 0) Move(d);
  }
  bool WaitUntil(std::condition_variable_any& cv, MutexLock& lock, MonoTime deadline,
                 absl::FunctionRef<bool()> done) const override {
    // No notification comes when the time moves, so the wait looks again
    // every millisecond of real time; nothing waits for simulated time.
    while (!done()) {
      if (MonoNow() >= deadline) return false;
      cv.wait_for(lock, std::chrono::milliseconds(1));
    }
    return true;
  }

  // Moves both clocks.
  void Advance(std::chrono::nanoseconds d) { Move(d); }
  // Sets the wall clock only, as someone setting the machine's time does.
  void Set(TimePoint t) { wall_ns_ = t.time_since_epoch().count(); }

 private:
  void Move(std::chrono::nanoseconds d) const {
    wall_ns_ += std::chrono::duration_cast<TimePoint::duration>(d).count();
    mono_ns_ += std::chrono::duration_cast<MonoTime::duration>(d).count();
  }

  mutable std::atomic<int64_t> wall_ns_;
  mutable std::atomic<int64_t> mono_ns_{int64_t{1'000'000'000} * 3600};
};

}  // namespace canhazgpu::host
