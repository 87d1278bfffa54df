#include "httpfront/http_request_frame.h"

#include <strings.h>

#include "core/strings.h"

namespace canhazgpu::httpfront {
namespace {

bool IsHeader(std::string_view name, std::string_view wanted) {
  return name.size() == wanted.size() && strncasecmp(name.data(), wanted.data(), name.size()) == 0;
}

RequestFrame Bad(int status, std::string why) {
  return RequestFrame{.kind = RequestFrame::kBad, .status = status, .why = std::move(why)};
}

const char* Reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

}  // namespace

RequestFrame FrameRequest(std::string_view in, size_t max_head, size_t max_body) {
  const size_t end = in.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (in.size() > max_head) return Bad(431, "request headers too large");
    return {};
  }
  const size_t head_size = end + 4;
  if (head_size > max_head) return Bad(431, "request headers too large");
  // Header lines after the request line; only the framing ones matter.
  std::string_view head = in.substr(0, end);
  bool has_length = false;
  size_t length = 0;
  size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos) {
    pos += 2;
    size_t next = head.find("\r\n", pos);
    std::string_view line = head.substr(pos, next == std::string_view::npos ? next : next - pos);
    pos = next;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // httplib answers 400
    std::string_view name = line.substr(0, colon);
    std::string_view value = Trim(line.substr(colon + 1));
    if (IsHeader(name, "transfer-encoding")) {
      return Bad(411, "request bodies need a content-length");
    }
    if (!IsHeader(name, "content-length")) continue;
    int64_t n = 0;
    if (has_length || !ParseInt(value, &n) || n < 0) {
      return Bad(400, "bad content-length");
    }
    if (static_cast<uint64_t>(n) > max_body) return Bad(413, "request body too large");
    has_length = true;
    length = static_cast<size_t>(n);
  }
  if (in.size() - head_size < length) return {};
  return RequestFrame{.kind = RequestFrame::kComplete, .size = head_size + length};
}

std::string PlainAnswer(int status, std::string_view text) {
  const std::string body = StrCat(text, "\n");
  return StrCat("HTTP/1.1 ", status, " ", Reason(status),
                "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ", body.size(),
                "\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n", body);
}

}  // namespace canhazgpu::httpfront
