// The server's stop: a SIGTERM at any moment after the "listening" line,
// even before the accept loop has started, ends ServeDashboard cleanly.
#include "web/dashboard_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace canhazgpu::web {
namespace {

bool Accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

DashboardSource EmptySource() {
  DashboardSource source{.host_name = "test"};
  source.status = []() -> absl::StatusOr<Json> { return Json::array(); };
  source.queue = []() -> absl::StatusOr<Json> { return Json::object(); };
  source.report = [](int) -> absl::StatusOr<Json> { return Json::object(); };
  return source;
}

TEST(DashboardServerTest, ASignalBeforeTheAcceptLoopStillStopsTheServer) {
  const sigset_t stop = StopSignals();
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &stop, nullptr), 0);
  ServeOptions options{.host = "127.0.0.1", .port = 0, .threads = 2};
  bool refused = false;
  // The signal comes, and is acted on, while the accept loop has not yet
  // begun: the callback runs just before it and waits for the socket to
  // stop taking connections (bounded, so a regression fails, not hangs).
  options.on_listening = [&refused](int port) {
    ASSERT_TRUE(Accepts(port));
    kill(getpid(), SIGTERM);
    for (int i = 0; i < 2000 && !refused; ++i) {
      refused = !Accepts(port);
      if (!refused) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!refused) {  // the server would now serve forever: fail instead of hanging
      std::fprintf(stderr, "the signal did not close the listening socket\n");
      std::_Exit(1);
    }
  };
  absl::Status served = ServeDashboard(options, EmptySource());
  EXPECT_TRUE(refused);
  EXPECT_TRUE(served.ok()) << served;
}

}  // namespace
}  // namespace canhazgpu::web
