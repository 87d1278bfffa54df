#include "cli/common/listen_address.h"

#include <cstdlib>

#include "core/strings.h"

namespace canhazgpu::cli {

absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& text) {
  const auto invalid = [&text] {
    return absl::InvalidArgumentError(StrCat("expected HOST:PORT, got '", text, "'"));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return invalid();
  const std::string port_text = text.substr(colon + 1);
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 0 || port > 65535) return invalid();
  std::string host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return invalid();
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return invalid();  // an IPv6 address needs its brackets
  }
  return ListenAddress{.host = host, .port = static_cast<int>(port)};
}

}  // namespace canhazgpu::cli
