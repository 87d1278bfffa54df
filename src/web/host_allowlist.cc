#include "web/host_allowlist.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"

namespace canhazgpu::web {
namespace {

bool IsPort(std::string_view text) {
  return !text.empty() && text.size() <= 5 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool IsLoopbackName(const std::string& name) {
  if (name == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, name.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, name.c_str(), &v6) == 1) {
    return std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0;
  }
  return false;
}

}  // namespace

std::string NormaliseHost(std::string_view host) {
  std::string_view name = host;
  if (host.starts_with('[')) {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return "";
    std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && !(rest[0] == ':' && IsPort(rest.substr(1)))) return "";
    name = host.substr(1, close - 1);
  } else if (const size_t colon = host.find(':'); colon != std::string_view::npos) {
    // One colon: name:port. More: a bare IPv6 address (only as a listed name).
    if (host.find(':', colon + 1) == std::string_view::npos) {
      if (!IsPort(host.substr(colon + 1))) return "";
      name = host.substr(0, colon);
    }
  }
  if (name.ends_with('.')) name.remove_suffix(1);  // "localhost." is localhost
  for (char c : name) {
    // Host names and address literals only: nothing that could smuggle.
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_' &&
        c != ':' && c != '%') {
      return "";
    }
  }
  std::string lower(name);
  for (char& c : lower) c = absl::ascii_tolower(static_cast<unsigned char>(c));
  return lower;
}

HostAllowlist::HostAllowlist(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    std::string name = NormaliseHost(n);
    if (name.empty() || name == "0.0.0.0" || name == "::") continue;
    names_.push_back(std::move(name));
  }
}

bool HostAllowlist::Allows(std::string_view host) const {
  if (host.empty()) return true;
  // A bare IPv6 address is no valid Host header (browsers send brackets).
  if (!host.starts_with('[') && std::count(host.begin(), host.end(), ':') > 1) return false;
  const std::string name = NormaliseHost(host);
  if (name.empty()) return false;
  return IsLoopbackName(name) || std::find(names_.begin(), names_.end(), name) != names_.end();
}

}  // namespace canhazgpu::web
