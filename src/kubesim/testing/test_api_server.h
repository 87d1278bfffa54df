// A simulated API server on a free loopback port, serving from its own
// thread for the life of one test.
#pragma once

#include <string>
#include <thread>

#include "kube/kubeconfig.h"
#include "kubesim/api_server.h"
#include "kubesim/object_store.h"

namespace canhazgpu::kubesim {

class TestApiServer {
 public:
  explicit TestApiServer(ApiServerOptions options = {}, const Clock* clock = nullptr)
      : store_(1000, clock != nullptr ? *clock : ObjectStore::DefaultClock()),
        server_(store_, std::move(options)) {
    port_ = server_.Bind("127.0.0.1", 0).value();
    thread_ = std::thread([this] { server_.Serve(); });
  }
  ~TestApiServer() {
    server_.Stop();
    thread_.join();
  }
  TestApiServer(const TestApiServer&) = delete;
  TestApiServer& operator=(const TestApiServer&) = delete;

  // Plain HTTP; tests with TLS change the scheme and add certificates.
  kube::RestConfig Config(const std::string& token = "") const {
    kube::RestConfig c;
    c.server = "http://127.0.0.1:" + std::to_string(port_);
    c.token = token;
    return c;
  }
  int port() const { return port_; }
  ObjectStore& store() { return store_; }
  ApiServer& server() { return server_; }
  void DropWatches() { server_.DropWatches(); }

 private:
  ObjectStore store_;
  ApiServer server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace canhazgpu::kubesim
