// Which Host headers the dashboard answers, against DNS rebinding: a page
// on evil.example that re-points its name at 127.0.0.1 reaches the
// dashboard as same-origin, but its requests still say "Host: evil.example".
// As Jupyter and `kubectl proxy` do, only loopback names (localhost,
// 127.0.0.0/8, [::1]) are answered, plus names the operator lists (the
// listening address, the machine's name, --allowed-hosts). The port is
// ignored, so an ssh tunnel to another local port still works. A request
// without a Host header (HTTP/1.0 tools; never a browser) is answered.
// Immutable after construction; safe to share between threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace canhazgpu::web {

class HostAllowlist {
 public:
  // `names`: host names or addresses, with or without brackets and port;
  // wildcard addresses (0.0.0.0, ::) and empty names are ignored.
  explicit HostAllowlist(const std::vector<std::string>& names);

  // `host`: the Host header's value, "" when there was none.
  bool Allows(std::string_view host) const;

 private:
  std::vector<std::string> names_;  // normalised: lowercase, no brackets, no port
};

// "LocalHost.:8080" -> "localhost", "[::1]:80" -> "::1"; "" when `host` is
// not a well-formed host[:port].
std::string NormaliseHost(std::string_view host);

}  // namespace canhazgpu::web
