// Who is at the other end of a loopback TCP connection: the uid that owns
// the client's socket, asked of the kernel (sock_diag netlink, as `ss -e`
// does). Every local user reaches a server on 127.0.0.1 from the same
// address, so the address cannot tell them apart; the socket's owner can.
// Unprivileged; one netlink round trip, no /proc scan, so it stays cheap
// under a flood of connections. Thread-safe (no shared state).
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include "absl/status/statusor.h"

namespace canhazgpu::host {

// The owner of the socket connected from `peer` to `local`, where `peer` is
// a loopback address (IPv4, IPv6 or IPv4-mapped) and `local` the accepted
// socket's own address. InvalidArgument for any other peer: only this
// network namespace's sockets can be asked about, and a remote address
// could match a local listener instead. NotFound when the client's socket
// has gone (closed, or in TIME_WAIT, which has no owner).
absl::StatusOr<uid_t> LoopbackPeerOwner(const sockaddr_storage& peer,
                                        const sockaddr_storage& local);

// True for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104.
bool IsLoopbackPeer(const sockaddr_storage& peer);

}  // namespace canhazgpu::host
