#include "core/clock.h"

#include <thread>

namespace canhazgpu {
namespace {

class MachineClock : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now(); }
  MonoTime MonoNow() const override { return std::chrono::steady_clock::now(); }
  void SleepFor(std::chrono::nanoseconds d) const override { std::this_thread::sleep_for(d); }
  bool WaitUntil(std::condition_variable_any& cv, MutexLock& lock, MonoTime deadline,
                 absl::FunctionRef<bool()> done) const override {
    // libstdc++ turns a steady deadline into an absolute timespec, which
    // overflows for max(): wait without one instead.
    if (deadline == MonoTime::max()) {
      cv.wait(lock, done);
      return true;
    }
    return cv.wait_until(lock, deadline, done);
  }
};

}  // namespace

const Clock& RealClock() {
  static const MachineClock* const clock = new MachineClock;
  return *clock;
}

}  // namespace canhazgpu
