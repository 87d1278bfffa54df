// httplib's request parser and router over the front (http_front.h): a
// request reaches httplib whole, in memory, and the answer is collected in
// memory, so httplib never waits on a client and never owns a socket or a
// thread. Register routes on it as on any httplib::Server, then hand
// Serve() to an HttpFront as its handler.
//
// Threading: Serve() is called from the front's loops, concurrently; the
// routes must be set before the front runs.
#pragma once

#include <httplib.h>

#include "httpfront/http_front.h"

namespace canhazgpu::httpfront {

class HttplibExchange : public httplib::Server {
 public:
  // Parses `ex.request`, runs the route and returns the whole response;
  // close is set when httplib would have closed the connection.
  Answer Serve(const Exchange& ex);
};

}  // namespace canhazgpu::httpfront
