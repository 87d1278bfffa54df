#include "httpfront/client_identity.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "absl/status/statusor.h"
#include "core/strings.h"
#include "host/socket_owner.h"

namespace canhazgpu::httpfront {

std::string AddressOf(const sockaddr_storage& addr, int* port) {
  char text[INET6_ADDRSTRLEN] = "";
  *port = 0;
  if (addr.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
    *port = ntohs(in.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    *port = ntohs(in6.sin6_port);
  }
  return text;
}

std::string ClientIdentity(int fd, const sockaddr_storage& peer, const sockaddr_storage& local) {
  if (peer.ss_family == AF_UNIX) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) return StrCat("uid ", cred.uid);
    return "unix";
  }
  if (host::IsLoopbackPeer(peer)) {
    if (absl::StatusOr<uid_t> owner = host::LoopbackPeerOwner(peer, local); owner.ok()) {
      return StrCat("uid ", *owner);
    }
  }
  int port = 0;
  return AddressOf(peer, &port);
}

}  // namespace canhazgpu::httpfront
