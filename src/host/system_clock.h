// The real wall clock. Stateless; thread-safe.
#pragma once

#include "core/clock.h"

namespace canhazgpu::host {

class SystemClock : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now(); }
};

}  // namespace canhazgpu::host
