// Test support for the daemon: a short temporary directory (unix socket
// paths are limited to 107 bytes), a FakeNodeService and a HealthBoard to
// start a PluginServer on, and raw gRPC calls by full method path. Not
// thread-safe; one per test.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "driver/health_board.h"
#include "grpcpp/support/status.h"
#include "kubeletplugin/plugin_server.h"
#include "kubeletplugin/testing/fake_node_service.h"

namespace canhazgpu::kubeletplugin::testing {

// A fresh directory under /tmp, removed with everything in it at the end.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct PluginHarness {
  // registrar_dir and plugin_dir inside `dir`, neither created yet.
  PluginServerOptions Options() const;
  absl::StatusOr<std::unique_ptr<PluginServer>> Start(PluginServerOptions options,
                                                      bool with_health = true);

  TempDir dir;
  FakeNodeService node;
  driver::HealthBoard health;
};

// A unary call to `method` ("/package.Service/Method") on `socket`, with the
// request and response as serialized bytes: a typo in a package or method
// name on either side makes it UNIMPLEMENTED.
grpc::Status RawUnaryCall(const std::string& socket, const std::string& method,
                          const std::string& request, std::string* response);

// Leaves a socket file at `path` that nobody listens on, as a killed plugin
// does.
void MakeStaleSocket(const std::string& path);

}  // namespace canhazgpu::kubeletplugin::testing
