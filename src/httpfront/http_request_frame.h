// Where one HTTP/1.1 request ends in the bytes received so far, so the
// front (http_front.h) calls the handler only once a request has arrived
// whole. Only the framing is read here (the blank line after the headers,
// Content-Length); httplib parses the request itself. Pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace canhazgpu::httpfront {

struct RequestFrame {
  enum Kind { kIncomplete, kComplete, kBad };
  Kind kind = kIncomplete;
  size_t size = 0;  // kComplete: bytes of the request, head and body
  int status = 0;   // kBad: the HTTP status to answer with
  std::string why;  // kBad: one line for the answer's body
};

// Frames the first request in `in`. Heads over `max_head` bytes are 431, a
// body over `max_body` 413, a bad or repeated Content-Length 400, and a
// Transfer-Encoding (a body of unknown length) 411.
RequestFrame FrameRequest(std::string_view in, size_t max_head, size_t max_body);

// A whole response with a one-line text body, closing the connection.
std::string PlainAnswer(int status, std::string_view text);

}  // namespace canhazgpu::httpfront
