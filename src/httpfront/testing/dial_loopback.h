// A test client's TCP connection to a server on this machine, for the
// front's own tests and the dashboard's and node daemon's integration tests.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>

namespace canhazgpu::httpfront::testing {

// Connects to 127.0.0.1:`port` from the address `from`: every 127.0.0.0/8
// address is this machine's, so one test can be several clients. Every read
// gives up after `guard_seconds`, so a hang fails a test instead of blocking
// it. Returns the fd, or -1. Only system calls: safe in a forked child of a
// threaded test.
inline int DialLoopback(int port, const char* from = "127.0.0.1", int guard_seconds = 20) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in local{};
  local.sin_family = AF_INET;
  if (inet_pton(AF_INET, from, &local.sin_addr) != 1 ||
      bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    close(fd);
    return -1;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{.tv_sec = guard_seconds, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

}  // namespace canhazgpu::httpfront::testing
