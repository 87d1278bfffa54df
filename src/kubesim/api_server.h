// The simulated API server's HTTP front: the Kubernetes REST paths, verbs,
// discovery, watch streams and Status errors, over an ObjectStore. Serves
// plain HTTP or TLS (cpp-httplib); one thread per connection from a pool,
// so long watches do not starve other requests. Stop() may be called from
// any thread (a signal handler's thread, a test).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubesim/object_store.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace canhazgpu::kubesim {

struct ApiServerOptions {
  // Bearer token every request must carry; empty: anyone may.
  std::string token;
  // "VERB:RESOURCE" pairs answered 403 (VERB or RESOURCE may be "*").
  std::vector<std::string> deny;
  // PEM server certificate and key: TLS when both are set.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // With TLS: clients must present a certificate signed by this CA.
  std::string tls_client_ca_pem;
  // Receives one line per request ("GET /api/v1/pods 200 1.2ms").
  std::function<void(const std::string&)> log;
  // How often a watch that asked for bookmarks gets one.
  int bookmark_seconds = 10;
};

class ApiServer {
 public:
  ApiServer(ObjectStore& store, ApiServerOptions options);
  ~ApiServer();

  // Binds `host`:`port` (0: a free port) and returns the port.
  absl::StatusOr<int> Bind(const std::string& host, int port);
  // Serves until Stop(); returns at once when Bind failed.
  void Serve();
  void Stop();

  // Fault injection: ends every open watch stream now (clients resume).
  void DropWatches();

 private:
  void Handle(const httplib::Request& req, httplib::Response& res);

  ObjectStore& store_;
  ApiServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> watch_epoch_{0};
};

}  // namespace canhazgpu::kubesim
