// The time seam. Code below the front-ends asks a Clock for the time, to
// sleep, and to wait with a deadline, instead of calling std::chrono's
// clocks or std::this_thread directly, so tests can move time with a
// FakeClock (host/testing/fake_clock.h) and never wait for it. The shape
// is abseil's Clock: TimeNow, Sleep and AwaitWithDeadline. Implementations
// must be safe to call from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "core/mutex.h"

namespace canhazgpu {

// Wall-clock time. Stored in the state file as integer epoch milliseconds.
using TimePoint = std::chrono::system_clock::time_point;
using Duration = std::chrono::milliseconds;
// Monotonic time: for deadlines, intervals and rates, which must not jump
// when someone sets the wall clock.
using MonoTime = std::chrono::steady_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;

  virtual TimePoint Now() const = 0;
  virtual MonoTime MonoNow() const = 0;
  virtual void SleepFor(std::chrono::nanoseconds d) const = 0;
  // Waits on `cv`, with `lock` held on entry and on return, until `done()`
  // or `deadline`. Returns done(). The waker notifies `cv` as with any
  // condition variable.
  virtual bool WaitUntil(std::condition_variable_any& cv, MutexLock& lock, MonoTime deadline,
                         absl::FunctionRef<bool()> done) const = 0;

  bool WaitFor(std::condition_variable_any& cv, MutexLock& lock, std::chrono::nanoseconds timeout,
               absl::FunctionRef<bool()> done) const {
    return WaitUntil(cv, lock, DeadlineAfter(timeout), done);
  }
  // MonoNow() + d, saturating instead of overflowing for "forever".
  MonoTime DeadlineAfter(std::chrono::nanoseconds d) const {
    const MonoTime now = MonoNow();
    return d >= MonoTime::max() - now ? MonoTime::max() : now + d;
  }
};

// The machine's clocks. The one place, with host/ and gpu/, that reads them.
const Clock& RealClock();

// Epoch milliseconds, the one time encoding of the state file.
inline int64_t ToEpochMillis(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
inline TimePoint FromEpochMillis(int64_t ms) {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::milliseconds(ms)));
}

}  // namespace canhazgpu
