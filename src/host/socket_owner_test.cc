// LoopbackPeerOwner against real loopback connections: this process's own,
// another user's (as root: a child that gives up root first), and one whose
// client has gone.
#include "host/socket_owner.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace canhazgpu::host {
namespace {

constexpr uid_t kNobody = 65534;

// A listening socket on `ip` (IPv4 or IPv6 loopback), any free port.
class Listener {
 public:
  explicit Listener(const char* ip) {
    const bool v6 = std::strchr(ip, ':') != nullptr;
    fd_ = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (v6) {
      auto& a = reinterpret_cast<sockaddr_in6&>(addr_);
      a.sin6_family = AF_INET6;
      inet_pton(AF_INET6, ip, &a.sin6_addr);
    } else {
      auto& a = reinterpret_cast<sockaddr_in&>(addr_);
      a.sin_family = AF_INET;
      inet_pton(AF_INET, ip, &a.sin_addr);
    }
    socklen_t len = sizeof addr_;
    ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&addr_), len) == 0 && listen(fd_, 8) == 0 &&
          getsockname(fd_, reinterpret_cast<sockaddr*>(&addr_), &len) == 0;
  }
  ~Listener() { close(fd_); }
  bool ok() const { return ok_; }

  // A client socket connected to the listener (not yet accepted).
  int Dial() const {
    int fd = socket(addr_.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const socklen_t len = addr_.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr_), len) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }

  // Accepts one connection: its peer and local addresses.
  int Accept(sockaddr_storage* peer, sockaddr_storage* local) const {
    socklen_t len = sizeof *peer;
    int fd = accept4(fd_, reinterpret_cast<sockaddr*>(peer), &len, SOCK_CLOEXEC);
    len = sizeof *local;
    getsockname(fd, reinterpret_cast<sockaddr*>(local), &len);
    return fd;
  }

 private:
  int fd_ = -1;
  sockaddr_storage addr_{};
  bool ok_ = false;
};

TEST(LoopbackPeerOwnerTest, OurOwnConnectionIsOurs) {
  for (const char* ip : {"127.0.0.1", "127.0.0.2", "::1"}) {
    Listener listener(ip);
    if (!listener.ok()) continue;  // no IPv6 here
    const int client = listener.Dial();
    ASSERT_GE(client, 0) << ip;
    sockaddr_storage peer{}, local{};
    const int server = listener.Accept(&peer, &local);
    absl::StatusOr<uid_t> owner = LoopbackPeerOwner(peer, local);
    ASSERT_TRUE(owner.ok()) << ip << ": " << owner.status();
    EXPECT_EQ(*owner, geteuid()) << ip;
    close(server);
    close(client);
  }
}

TEST(LoopbackPeerOwnerTest, AnotherUsersConnectionIsTheirs) {
  if (geteuid() != 0) GTEST_SKIP() << "only root can connect as another user";
  Listener listener("127.0.0.1");
  ASSERT_TRUE(listener.ok());
  int done[2];
  ASSERT_EQ(pipe(done), 0);
  const pid_t child = fork();
  if (child == 0) {
    // Connects as nobody and holds the connection until the parent is done.
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(2);
    const int fd = listener.Dial();
    char byte;
    (void)!read(done[0], &byte, 1);
    close(fd);
    _exit(fd >= 0 ? 0 : 1);
  }
  sockaddr_storage peer{}, local{};
  const int server = listener.Accept(&peer, &local);
  absl::StatusOr<uid_t> owner = LoopbackPeerOwner(peer, local);
  (void)!write(done[1], "x", 1);
  int status = 0;
  waitpid(child, &status, 0);
  close(server);
  close(done[0]);
  close(done[1]);
  ASSERT_TRUE(owner.ok()) << owner.status();
  EXPECT_EQ(*owner, kNobody);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(LoopbackPeerOwnerTest, AClientThatHasGoneIsNotFound) {
  Listener listener("127.0.0.1");
  ASSERT_TRUE(listener.ok());
  const int client = listener.Dial();
  sockaddr_storage peer{}, local{};
  const int server = listener.Accept(&peer, &local);
  // A reset leaves no TIME_WAIT socket behind.
  linger reset{.l_onoff = 1, .l_linger = 0};
  setsockopt(client, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  close(client);
  EXPECT_EQ(LoopbackPeerOwner(peer, local).status().code(), absl::StatusCode::kNotFound);
  close(server);
}

TEST(LoopbackPeerOwnerTest, OnlyLoopbackPeersAreAskedAbout) {
  sockaddr_storage peer{}, local{};
  auto& p = reinterpret_cast<sockaddr_in&>(peer);
  p.sin_family = AF_INET;
  inet_pton(AF_INET, "192.0.2.1", &p.sin_addr);
  EXPECT_FALSE(IsLoopbackPeer(peer));
  EXPECT_EQ(LoopbackPeerOwner(peer, local).status().code(), absl::StatusCode::kInvalidArgument);
  // An IPv4 client as a dual-stack listener sees it.
  sockaddr_storage mapped{};
  auto& m = reinterpret_cast<sockaddr_in6&>(mapped);
  m.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "::ffff:127.0.0.1", &m.sin6_addr);
  EXPECT_TRUE(IsLoopbackPeer(mapped));
}

}  // namespace
}  // namespace canhazgpu::host
