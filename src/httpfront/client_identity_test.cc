// ClientIdentity over real sockets: a unix socket's peer and a loopback TCP
// client are named by uid, anyone else by address.
#include "httpfront/client_identity.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/strings.h"

namespace canhazgpu::httpfront {
namespace {

TEST(ClientIdentityTest, AUnixSocketPeerIsItsUid) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  sockaddr_storage peer{}, local{};
  peer.ss_family = local.ss_family = AF_UNIX;
  EXPECT_EQ(ClientIdentity(pair[0], peer, local), StrCat("uid ", geteuid()));
  close(pair[0]);
  close(pair[1]);
}

TEST(ClientIdentityTest, ALoopbackClientIsItsUidAndOnceGoneItsAddress) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {htonl(INADDR_LOOPBACK)}};
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&addr), len), 0);
  sockaddr_storage peer{}, local{};
  socklen_t peer_len = sizeof peer;
  const int server = accept(listener, reinterpret_cast<sockaddr*>(&peer), &peer_len);
  socklen_t local_len = sizeof local;
  getsockname(server, reinterpret_cast<sockaddr*>(&local), &local_len);
  EXPECT_EQ(ClientIdentity(server, peer, local), StrCat("uid ", geteuid()));
  linger reset{.l_onoff = 1, .l_linger = 0};
  setsockopt(client, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  close(client);
  EXPECT_EQ(ClientIdentity(server, peer, local), "127.0.0.1");
  close(server);
  close(listener);
}

TEST(ClientIdentityTest, ARemoteClientIsItsAddress) {
  sockaddr_storage peer{}, local{};
  auto& in = reinterpret_cast<sockaddr_in6&>(peer);
  in.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "2001:db8::7", &in.sin6_addr);
  EXPECT_EQ(ClientIdentity(-1, peer, local), "2001:db8::7");
}

}  // namespace
}  // namespace canhazgpu::httpfront
