// Who a connection comes from, as the front counts it (client_table.h), so
// that one client's connections cannot lock out another's:
//  - over a unix socket: "uid N", the peer's (SO_PEERCRED);
//  - over TCP from a loopback address: "uid N", the owner of the client's
//    socket (host/socket_owner.h), because every local user of a server on
//    127.0.0.1 comes from that one address;
//  - over TCP from elsewhere: the peer's address, e.g. "10.1.2.3".
// A loopback client whose socket cannot be found (it has already closed)
// is counted under its address. Called on the front's loops; thread-safe.
#pragma once

#include <sys/socket.h>

#include <functional>
#include <string>

namespace canhazgpu::httpfront {

// `fd` is the accepted connection, `peer` and `local` its two ends.
std::string ClientIdentity(int fd, const sockaddr_storage& peer, const sockaddr_storage& local);

// ClientIdentity, or a stand-in (tests tell clients apart by address).
using IdentifyClient =
    std::function<std::string(int fd, const sockaddr_storage& peer, const sockaddr_storage& local)>;

// The peer's address as text ("127.0.0.1", "::1"), and its port in `port`;
// empty for a unix socket.
std::string AddressOf(const sockaddr_storage& addr, int* port);

}  // namespace canhazgpu::httpfront
