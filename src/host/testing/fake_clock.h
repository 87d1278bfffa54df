// A Clock that only moves when a test says so. Not thread-safe: tests that
// share one across threads must synchronise themselves.
#pragma once

#include "core/clock.h"

namespace canhazgpu::host {

class FakeClock : public Clock {
 public:
  explicit FakeClock(TimePoint start = FromEpochMillis(1'790'000'000'000)) : now_(start) {}
  TimePoint Now() const override { return now_; }
  void Advance(Duration d) { now_ += d; }
  void Set(TimePoint t) { now_ = t; }

 private:
  TimePoint now_;
};

}  // namespace canhazgpu::host
