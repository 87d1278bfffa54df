// Slow HTTP clients in a child process running as another user, so that a
// test can flood a server from 127.0.0.1 and still be a client the server
// tells apart (servers count a local client's connections by its uid,
// src/httpfront/client_identity.h), and a plain GET with a failure guard.
// Runs as root only; not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

namespace canhazgpu::testing {

inline constexpr uid_t kNobody = 65534;

class SlowClients {
 public:
  // Forks a child that becomes `uid`, opens `count` connections to
  // 127.0.0.1:`port`, starts a request on each and sends one more header
  // line on each every 200 ms, never finishing. Returns once all are open
  // (the server may have refused some: they are closed with a 503).
  SlowClients(uid_t uid, int port, int count);
  ~SlowClients();  // kills the child
  SlowClients(const SlowClients&) = delete;
  SlowClients& operator=(const SlowClients&) = delete;

  // Whether the child was started and opened every connection.
  bool started() const { return started_; }

  // The first line of the answer to one more connection of the child's, a
  // whole GET of `path`; empty when none came.
  std::string OneMore(const std::string& path);

 private:
  pid_t child_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  bool started_ = false;
};

struct HttpGetReply {
  int code = 0;  // 0: no answer within the guard
  std::string body;
};

// GET `path` from 127.0.0.1:`port` on a new connection, "Connection: close".
// `guard` only tells a hang from an answer; tests assert on the reply.
HttpGetReply HttpGet(int port, const std::string& path,
                     std::chrono::seconds guard = std::chrono::seconds(10));

}  // namespace canhazgpu::testing
