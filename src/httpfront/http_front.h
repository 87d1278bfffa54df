// The connection front of both HTTP servers, the dashboard (canhazgpu-web)
// and the node daemon's probes and metrics (k8shazgpu-node): a few epoll
// event loops that accept, read each request whole and write each answer
// without blocking, and call a handler only once a request has fully
// arrived. A slow or silent client therefore holds memory, never a thread:
// a request must arrive whole (headers and body) within a deadline that
// trickling cannot extend; one client may hold only so many connections,
// and when all are taken a client holding fewer takes one of the biggest
// holder's (client_table.h; a client is a user of this machine, else an
// address: client_identity.h); and Stop() ends every loop at once however
// many connections are open.
//
// Threading: Run() serves on `loops` threads of its own and returns when
// they have ended; the handler is called from those threads, concurrently.
// Stop() may be called from any thread (it only writes an eventfd and shuts
// the listening socket down).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "httpfront/client_identity.h"

namespace canhazgpu::httpfront {

struct FrontLimits {
  int loops = 4;                    // event-loop threads
  int max_client_connections = 16;  // open at once by one client
  int max_connections = 1000;       // in all (also kept under the fd limit)
  // From the connection's start, or the end of the previous answer, until
  // the next request has arrived whole; an idle keep-alive connection is
  // closed at the same point.
  std::chrono::milliseconds request_deadline{10'000};
  std::chrono::milliseconds write_deadline{10'000};  // to send one answer
  size_t max_head_bytes = 16 * 1024;
  size_t max_body_bytes = 64 * 1024;
};

// One whole request, and where it came from.
struct Exchange {
  std::string_view request;  // request line, headers and body
  int fd = -1;               // the connection, only to tell it apart
  std::string_view remote_ip;
  int remote_port = 0;
  std::string_view local_ip;
  int local_port = 0;
};

struct Answer {
  std::string bytes;   // the whole HTTP response
  bool close = false;  // close the connection once it is sent
};

using ExchangeHandler = std::function<Answer(const Exchange&)>;

// A listening TCP socket on host:port (port 0: any free one), without
// SO_REUSEPORT, so a port in use is an error that says so:
// "127.0.0.1:8080: address already in use".
absl::StatusOr<int> ListenTcp(const std::string& host, int port);

// The port a socket is bound to.
int BoundPort(int fd);

class HttpFront {
 public:
  // Takes ownership of `listen_fd`. `identify` names the client each
  // connection is counted under.
  HttpFront(int listen_fd, FrontLimits limits, ExchangeHandler handler,
            IdentifyClient identify = ClientIdentity);
  ~HttpFront();
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  // Serves until Stop(); an error only when the loops cannot be set up.
  absl::Status Run();
  void Stop();

  struct Shared;  // the state the loops share (http_front.cc)

 private:
  std::unique_ptr<Shared> shared_;
};

}  // namespace canhazgpu::httpfront
