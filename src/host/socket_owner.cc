#include "host/socket_owner.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/strings.h"

namespace canhazgpu::host {
namespace {

// An address as sock_diag names it: family, port and up to 16 bytes.
struct Endpoint {
  int family = AF_UNSPEC;
  uint16_t port = 0;  // network order
  uint32_t addr[4] = {0, 0, 0, 0};
};

// IPv4-mapped IPv6 addresses (a dual-stack listener's view of an IPv4
// client) become IPv4: the client's socket is an IPv4 one.
Endpoint EndpointOf(const sockaddr_storage& s) {
  Endpoint e;
  if (s.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(s);
    e.family = AF_INET;
    e.port = in.sin_port;
    std::memcpy(e.addr, &in.sin_addr, 4);
  } else if (s.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(s);
    e.port = in6.sin6_port;
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
      e.family = AF_INET;
      std::memcpy(e.addr, in6.sin6_addr.s6_addr + 12, 4);
    } else {
      e.family = AF_INET6;
      std::memcpy(e.addr, &in6.sin6_addr, 16);
    }
  }
  return e;
}

// Whether the kernel's answer names the socket asked about. An IPv4 client
// on an IPv6 socket (connected to ::ffff:127.0.0.1) is found by the IPv4
// lookup but described with mapped addresses; compare those as IPv4.
bool SameSocket(const inet_diag_msg& msg, const Endpoint& src, const Endpoint& dst) {
  auto same = [&msg](const uint32_t* got, const Endpoint& want) {
    in6_addr a;
    std::memcpy(&a, got, sizeof a);
    if (msg.idiag_family == AF_INET6 && want.family == AF_INET && IN6_IS_ADDR_V4MAPPED(&a)) {
      return got[3] == want.addr[0];
    }
    return std::memcmp(got, want.addr, sizeof want.addr) == 0;
  };
  return msg.id.idiag_sport == src.port && msg.id.idiag_dport == dst.port &&
         same(msg.id.idiag_src, src) && same(msg.id.idiag_dst, dst);
}

// Closes the netlink socket however the lookup ends.
class NetlinkSocket {
 public:
  NetlinkSocket() : fd_(socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)) {}
  ~NetlinkSocket() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }

 private:
  const int fd_;
};

}  // namespace

bool IsLoopbackPeer(const sockaddr_storage& peer) {
  const Endpoint e = EndpointOf(peer);
  if (e.family == AF_INET) return (ntohl(e.addr[0]) >> 24) == 127;
  if (e.family == AF_INET6) {
    in6_addr a;
    std::memcpy(&a, e.addr, sizeof a);
    return IN6_IS_ADDR_LOOPBACK(&a);
  }
  return false;
}

absl::StatusOr<uid_t> LoopbackPeerOwner(const sockaddr_storage& peer,
                                        const sockaddr_storage& local) {
  if (!IsLoopbackPeer(peer)) {
    return absl::InvalidArgumentError("peer: not a loopback address");
  }
  // The client's socket: its source is our peer, its destination us.
  const Endpoint src = EndpointOf(peer);
  const Endpoint dst = EndpointOf(local);
  NetlinkSocket nl;
  if (nl.fd() < 0) return absl::UnavailableError(StrCat("sock_diag: ", std::strerror(errno)));
  struct {
    nlmsghdr head;
    inet_diag_req_v2 req;
  } ask{};
  ask.head.nlmsg_len = sizeof ask;
  ask.head.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.head.nlmsg_flags = NLM_F_REQUEST;  // one socket, not a dump
  ask.req.sdiag_family = static_cast<uint8_t>(src.family);
  ask.req.sdiag_protocol = IPPROTO_TCP;
  ask.req.idiag_states = ~0u;
  ask.req.id.idiag_sport = src.port;
  ask.req.id.idiag_dport = dst.port;
  std::memcpy(ask.req.id.idiag_src, src.addr, sizeof src.addr);
  std::memcpy(ask.req.id.idiag_dst, dst.addr, sizeof dst.addr);
  ask.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  ask.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(nl.fd(), &ask, sizeof ask, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) <
      0) {
    return absl::UnavailableError(StrCat("sock_diag: ", std::strerror(errno)));
  }
  // The kernel answers within sendto, so the reply is already queued; never
  // block a server's event loop on it.
  alignas(nlmsghdr) char buf[8192];
  const ssize_t n = recv(nl.fd(), buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0) return absl::UnavailableError(StrCat("sock_diag: ", std::strerror(errno)));
  const auto* head = reinterpret_cast<const nlmsghdr*>(buf);
  if (!NLMSG_OK(head, static_cast<size_t>(n))) {
    return absl::UnavailableError("sock_diag: short answer");
  }
  if (head->nlmsg_type == NLMSG_ERROR) {
    const auto* err = static_cast<const nlmsgerr*>(NLMSG_DATA(head));
    if (err->error == -ENOENT) return absl::NotFoundError("peer: no such socket");
    return absl::UnavailableError(StrCat("sock_diag: ", std::strerror(-err->error)));
  }
  if (head->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
      head->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) {
    return absl::UnavailableError("sock_diag: unexpected answer");
  }
  const auto* msg = static_cast<const inet_diag_msg*>(NLMSG_DATA(head));
  // The lookup falls back to a listener on the peer's port; only the very
  // socket connected to us says who the client is. A TIME_WAIT socket has
  // no owner (the kernel reports uid 0 for it).
  if (!SameSocket(*msg, src, dst) || msg->idiag_state == TCP_LISTEN ||
      msg->idiag_state == TCP_TIME_WAIT || msg->idiag_state == TCP_CLOSE) {
    return absl::NotFoundError("peer: no such socket");
  }
  return static_cast<uid_t>(msg->idiag_uid);
}

}  // namespace canhazgpu::host
