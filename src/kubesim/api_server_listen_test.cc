#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "gtest/gtest.h"
#include "kubesim/api_server.h"
#include "kubesim/object_store.h"

namespace canhazgpu::kubesim {
namespace {

// The backlog of this process's socket listening on `port`, as the kernel
// reports it for a listening socket (TCP_INFO's tcpi_sacked); -1 if none.
int ListenBacklogOfPort(int port) {
  for (int fd = 0; fd < 1024; ++fd) {
    int accepting = 0;
    socklen_t len = sizeof(accepting);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || !accepting) continue;
    sockaddr_in addr{};
    len = sizeof(addr);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        addr.sin_family != AF_INET || ntohs(addr.sin_port) != port) {
      continue;
    }
    tcp_info info{};
    len = sizeof(info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return -1;
    return static_cast<int>(info.tcpi_sacked);
  }
  return -1;
}

// httplib's own backlog is 5: a simulated cluster's control plane opens
// seven connections at once, and the kernel dropped the extra SYNs, each
// client retrying a second later. The server listens with the full backlog.
TEST(ApiServerListenTest, TheApiServerQueuesABurstOfConnections) {
  ObjectStore store(100);
  ApiServer server(store, {});
  absl::StatusOr<int> port = server.Bind("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_GE(ListenBacklogOfPort(*port), 128);
}

}  // namespace
}  // namespace canhazgpu::kubesim
