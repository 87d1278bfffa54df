#include "kube/stop_pipe.h"

#include <poll.h>

#include <thread>

#include "gtest/gtest.h"

namespace canhazgpu::kube {
namespace {

// Whether `fd` is readable now, without waiting.
bool ReadableNow(int fd) {
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

TEST(StopPipeTest, ReadableOnlyOnceStoppedAndThenForGood) {
  StopPipe stop;
  ASSERT_GE(stop.fd(), 0);
  EXPECT_FALSE(stop.stopped());
  EXPECT_FALSE(ReadableNow(stop.fd()));
  stop.Stop();
  stop.Stop();  // a second stop is harmless
  EXPECT_TRUE(stop.stopped());
  EXPECT_TRUE(ReadableNow(stop.fd()));
  EXPECT_TRUE(ReadableNow(stop.fd()));  // nothing to drain: every poller sees it
}

// The waiter blocks without a timeout: only the stop can wake it, so the
// test passes by finishing, not by a measured delay.
TEST(StopPipeTest, StopWakesEveryThreadBlockedInPoll) {
  StopPipe stop;
  ASSERT_GE(stop.fd(), 0);
  auto wait = [&] {
    pollfd p{.fd = stop.fd(), .events = POLLIN, .revents = 0};
    while (::poll(&p, 1, -1) != 1) {
    }
    EXPECT_TRUE(stop.stopped());  // the flag is set before the pipe wakes
  };
  std::thread first(wait);
  std::thread second(wait);
  stop.Stop();
  first.join();
  second.join();
}

}  // namespace
}  // namespace canhazgpu::kube
