#include "kubeletplugin/testing/plugin_harness.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <vector>

#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/byte_buffer.h"
#include "kubeletplugin/grpc_deadline.h"

namespace canhazgpu::kubeletplugin::testing {

TempDir::TempDir() {
  // /tmp, not TEST_TMPDIR or the build tree: their paths may be long.
  char path[] = "/tmp/chgd.XXXXXX";
  if (::mkdtemp(path) == nullptr) {
    std::abort();  // no test can run without it
  }
  path_ = path;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

PluginServerOptions PluginHarness::Options() const {
  PluginServerOptions options;
  options.registrar_dir = dir.path() + "/registry";
  options.plugin_dir = dir.path() + "/plugins/" + kDriverName;
  return options;
}

absl::StatusOr<std::unique_ptr<PluginServer>> PluginHarness::Start(PluginServerOptions options,
                                                                   bool with_health) {
  return PluginServer::Start(std::move(options), node, with_health ? &health : nullptr);
}

grpc::Status RawUnaryCall(const std::string& socket, const std::string& method,
                          const std::string& request, std::string* response) {
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(DeadlineAfter(std::chrono::seconds(10)));
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer response_buffer;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request_buffer, &response_buffer,
                 [&done](grpc::Status status) { done.set_value(std::move(status)); });
  grpc::Status status = done.get_future().get();
  std::vector<grpc::Slice> slices;
  response->clear();
  if (status.ok() && response_buffer.Dump(&slices).ok()) {
    for (const grpc::Slice& part : slices) {
      response->append(reinterpret_cast<const char*>(part.begin()), part.size());
    }
  }
  return status;
}

void MakeStaleSocket(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    std::abort();
  }
  // Closing without unlinking leaves the file behind.
  ::close(fd);
}

}  // namespace canhazgpu::kubeletplugin::testing
