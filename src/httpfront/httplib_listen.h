// Binding a cpp-httplib server so that a burst of clients is not refused.
//
// Debian 12's libcpp-httplib (0.11) listens with a backlog of 5
// (CPPHTTPLIB_LISTEN_BACKLOG is compiled into the shared library, so it
// cannot be raised from here). When more clients connect at once than the
// accept loop has taken — a simulated cluster's seven control-plane
// informers starting together — the kernel drops the extra SYNs and each of
// those clients tries again a second later. The servers built on httplib
// (the simulated API server, the test git and Hugging Face servers) bind
// through this instead, which listens again with the kernel's full backlog.
#pragma once

#include <httplib.h>

#include <string>

namespace canhazgpu::httpfront {

// Binds `server` to `host`:`port` (0: any free port) with httplib's default
// socket options and a SOMAXCONN backlog. Returns the port, or -1 when it
// cannot bind. Serve with server.listen_after_bind().
int BindWithFullBacklog(httplib::Server& server, const std::string& host, int port);

}  // namespace canhazgpu::httpfront
