#include "core/url_host.h"

#include <algorithm>

#include "absl/strings/ascii.h"

namespace canhazgpu {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](char c) { return absl::ascii_tolower(static_cast<unsigned char>(c)); });
  return out;
}

bool IsSchemeChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

}  // namespace

std::string HostWithoutPort(std::string_view host) {
  if (host.starts_with('[')) {
    const size_t close = host.find(']');
    return Lower(close == std::string_view::npos ? host.substr(1) : host.substr(1, close - 1));
  }
  // More than one colon without brackets: a bare IPv6 address, no port.
  const size_t colon = host.find(':');
  if (colon != std::string_view::npos && host.find(':', colon + 1) == std::string_view::npos) {
    host = host.substr(0, colon);
  }
  return Lower(host);
}

std::optional<UrlHost> ParseUrlHost(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end != std::string_view::npos && scheme_end > 0 &&
      std::all_of(url.begin(), url.begin() + scheme_end, IsSchemeChar)) {
    UrlHost out{.scheme = Lower(url.substr(0, scheme_end)), .host = ""};
    std::string_view authority = url.substr(scheme_end + 3);
    authority = authority.substr(0, authority.find_first_of("/?#"));
    if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
      authority.remove_prefix(at + 1);
    }
    out.host = HostWithoutPort(authority);
    if (out.host.empty() && out.scheme != "file") return std::nullopt;
    return out;
  }
  // scp-like: [user@]host:path, the colon before any slash.
  const size_t colon = url.find(':');
  const size_t slash = url.find('/');
  if (colon == std::string_view::npos || colon == 0 ||
      (slash != std::string_view::npos && slash < colon)) {
    return std::nullopt;
  }
  std::string_view host = url.substr(0, colon);
  if (const size_t at = host.rfind('@'); at != std::string_view::npos) host.remove_prefix(at + 1);
  if (host.empty()) return std::nullopt;
  return UrlHost{.scheme = "ssh", .host = Lower(host)};
}

bool IsLoopbackHost(std::string_view host_in) {
  const std::string host = HostWithoutPort(host_in);
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

}  // namespace canhazgpu
