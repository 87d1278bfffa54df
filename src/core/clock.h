// The time seam. Code below the front-ends asks a Clock for "now" instead of
// calling std::chrono::system_clock directly, so tests can move time with a
// FakeClock (host/testing/fake_clock.h) and never sleep. Implementations must
// be safe to call from any thread.
#pragma once

#include <chrono>

namespace canhazgpu {

// Wall-clock time. Stored in the state file as integer epoch milliseconds.
using TimePoint = std::chrono::system_clock::time_point;
using Duration = std::chrono::milliseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
};

// Epoch milliseconds, the one time encoding of the state file.
inline int64_t ToEpochMillis(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
inline TimePoint FromEpochMillis(int64_t ms) {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::milliseconds(ms)));
}

}  // namespace canhazgpu
