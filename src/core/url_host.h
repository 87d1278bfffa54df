// Where a URL points: its scheme and host, for deciding where a credential
// may be sent. Reads the URLs the cache fetches from: scheme://[user@]host
// [:port][/path] (IPv6 hosts in brackets) and git's scp-like
// [user@]host:path, which is ssh. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace canhazgpu {

struct UrlHost {
  std::string scheme;  // lowercase: "https", "http", "ssh", "git", "file"
  std::string host;    // lowercase, without brackets or port; "" for file://
  bool operator==(const UrlHost&) const = default;
};

// nullopt when `url` has neither a scheme nor the scp-like form, or names
// no host where its scheme needs one.
std::optional<UrlHost> ParseUrlHost(std::string_view url);

// `host` without a port ("ghcr.io:443" -> "ghcr.io", "[::1]:5000" ->
// "::1"), lowercased.
std::string HostWithoutPort(std::string_view host);

// 127.0.0.0/8, ::1 and localhost: traffic that never leaves the machine.
bool IsLoopbackHost(std::string_view host);

}  // namespace canhazgpu
