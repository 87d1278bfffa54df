// libFuzzer target: what a client sends before the dashboard trusts it, the
// request framing (httpfront/http_request_frame.h) and the Host check
// (host_allowlist.h). A frame never claims more bytes than it was given, and
// a name the allowlist was given is always allowed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "httpfront/http_request_frame.h"
#include "web/host_allowlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using canhazgpu::httpfront::RequestFrame;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const RequestFrame frame = canhazgpu::httpfront::FrameRequest(in, 1024, 256);
  if (frame.kind == RequestFrame::kComplete && (frame.size > in.size() || frame.size == 0)) {
    std::abort();
  }
  if (frame.kind == RequestFrame::kBad && (frame.status < 400 || frame.why.empty())) std::abort();
  // The first line is a listed name, the rest a Host header.
  const size_t nl = in.find('\n');
  const std::string listed(in.substr(0, nl));
  const std::string_view host = nl == std::string_view::npos ? "" : in.substr(nl + 1);
  const canhazgpu::web::HostAllowlist hosts({listed});
  (void)hosts.Allows(host);
  const std::string name = canhazgpu::web::NormaliseHost(listed);
  if (!name.empty() && name != "0.0.0.0" && name != "::" && listed.find(':') == std::string::npos &&
      !hosts.Allows(listed)) {
    std::abort();
  }
  return 0;
}
