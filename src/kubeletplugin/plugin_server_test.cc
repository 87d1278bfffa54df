// PluginServer's sockets: where they go, what happens to files already
// there, the path limit, cleanup, and the standard gRPC health service.
#include "kubeletplugin/plugin_server.h"

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubeletplugin/kubelet_client.h"
#include "kubeletplugin/testing/plugin_harness.h"

namespace canhazgpu::kubeletplugin {
namespace {

using ::testing::HasSubstr;
using testing::MakeStaleSocket;
using testing::PluginHarness;
using testing::RawUnaryCall;

bool WaitUntil(const std::function<bool()>& condition) {
  for (int i = 0; i < 2000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool IsSocket(const std::string& path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

TEST(PluginServerTest, CreatesMissingDirectoriesWithMode0750) {
  PluginHarness harness;
  auto server = harness.Start(harness.Options());
  ASSERT_TRUE(server.ok()) << server.status();
  for (const std::string& dir : {harness.Options().registrar_dir, harness.Options().plugin_dir,
                                 harness.dir.path() + "/plugins"}) {
    struct stat info;
    ASSERT_EQ(::stat(dir.c_str(), &info), 0) << dir;
    EXPECT_EQ(info.st_mode & 0777, 0750u) << dir;
  }
  EXPECT_TRUE(IsSocket((*server)->registration_socket()));
  EXPECT_TRUE(IsSocket((*server)->dra_socket()));
}

TEST(PluginServerTest, ReplacesStaleSockets) {
  PluginHarness harness;
  PluginServerOptions options = harness.Options();
  std::filesystem::create_directories(options.registrar_dir);
  std::filesystem::create_directories(options.plugin_dir);
  MakeStaleSocket(options.registrar_dir + "/gpu.canhazgpu.dev-reg.sock");
  MakeStaleSocket(options.plugin_dir + "/dra.sock");

  auto server = harness.Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = KubeletClient::Register((*server)->registration_socket());
  ASSERT_TRUE(client.ok()) << client.status();
  auto prepared = (*client)->NodePrepareResources({{"default", "uid-1", "claim-1"}});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->at("uid-1").error, "");
}

TEST(PluginServerTest, LeavesAFileThatIsNotASocket) {
  PluginHarness harness;
  PluginServerOptions options = harness.Options();
  std::filesystem::create_directories(options.plugin_dir);
  std::string file = options.plugin_dir + "/dra.sock";
  std::ofstream(file) << "not a socket";

  auto server = harness.Start(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(server.status().message(), HasSubstr("not a socket"));
  EXPECT_TRUE(std::filesystem::is_regular_file(file));
}

TEST(PluginServerTest, RefusesSocketPathsLongerThan107Bytes) {
  PluginHarness harness;
  PluginServerOptions options = harness.Options();
  options.plugin_dir = harness.dir.path() + "/" + std::string(120, 'p');

  auto server = harness.Start(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("unix sockets allow 107"));
  // Refused before anything was created: no registration without a DRA socket.
  EXPECT_FALSE(std::filesystem::exists(options.registrar_dir));
}

TEST(PluginServerTest, AcceptsASocketPathOfExactly107Bytes) {
  PluginHarness harness;
  PluginServerOptions options = harness.Options();
  // "<dir>/<padding>/dra.sock" padded to the limit.
  size_t fixed = harness.dir.path().size() + std::string("//dra.sock").size();
  options.plugin_dir = harness.dir.path() + "/" + std::string(107 - fixed, 'p');

  auto server = harness.Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->dra_socket().size(), 107u);
}

TEST(PluginServerTest, ShutdownRemovesBothSockets) {
  PluginHarness harness;
  auto server = harness.Start(harness.Options());
  ASSERT_TRUE(server.ok()) << server.status();
  std::string registration = (*server)->registration_socket();
  std::string dra = (*server)->dra_socket();
  ASSERT_TRUE(IsSocket(registration));
  ASSERT_TRUE(IsSocket(dra));

  (*server)->Shutdown();
  EXPECT_FALSE(std::filesystem::exists(registration));
  EXPECT_FALSE(std::filesystem::exists(dra));
  (*server)->Shutdown();  // idempotent
}

TEST(PluginServerTest, ShutdownLetsAPrepareInFlightFinishAndAnswer) {
  PluginHarness harness;
  auto server = harness.Start(harness.Options());
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = KubeletClient::Register((*server)->registration_socket());
  ASSERT_TRUE(client.ok()) << client.status();
  harness.node.Hold();
  absl::StatusOr<std::map<std::string, driver::PrepareResult>> answer;
  std::thread kubelet([&] {
    answer = (*client)->NodePrepareResources({{.namespace_name = "ns", .uid = "u1", .name = "c1"}});
  });
  if (!harness.node.WaitForPreparesStarted(1, std::chrono::seconds(20))) {
    // Say why: the call may have failed before reaching the node (it once
    // did under TSan on a loaded CI machine, without a report).
    harness.node.Release();
    kubelet.join();
    FAIL() << "no prepare reached the node; the kubelet's call returned "
           << (answer.ok() ? std::string("OK") : answer.status().ToString());
  }
  std::atomic<bool> shut{false};
  std::thread stopper([&] {
    (*server)->Shutdown();
    shut = true;
  });
  // Shutdown has begun (the registration socket goes first). Held past
  // the 300 ms gRPC gets once nothing of ours runs, the prepare would be
  // cancelled if Shutdown did not wait for it; it has 5 s of grace.
  const std::string registration = (*server)->registration_socket();
  ASSERT_TRUE(WaitUntil([&] { return !std::filesystem::exists(registration); }));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_FALSE(shut);
  harness.node.Release();
  kubelet.join();
  stopper.join();
  EXPECT_TRUE(shut);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->at("u1").error, "");
  EXPECT_FALSE(IsSocket((*server)->dra_socket()));
}

TEST(PluginServerTest, DestructorRemovesBothSockets) {
  PluginHarness harness;
  std::string registration, dra;
  {
    auto server = harness.Start(harness.Options());
    ASSERT_TRUE(server.ok()) << server.status();
    registration = (*server)->registration_socket();
    dra = (*server)->dra_socket();
  }
  EXPECT_FALSE(std::filesystem::exists(registration));
  EXPECT_FALSE(std::filesystem::exists(dra));
}

TEST(PluginServerTest, GrpcHealthCheckIsServingOnBothSockets) {
  PluginHarness harness;
  auto server = harness.Start(harness.Options());
  ASSERT_TRUE(server.ok()) << server.status();
  for (const std::string& socket : {(*server)->registration_socket(), (*server)->dra_socket()}) {
    // grpc.health.v1.HealthCheckRequest{service: ""} is empty on the wire;
    // the response HealthCheckResponse{status: SERVING (1)} is field 1 = 1.
    std::string response;
    grpc::Status status = RawUnaryCall(socket, "/grpc.health.v1.Health/Check", "", &response);
    ASSERT_TRUE(status.ok()) << socket << ": " << status.error_message();
    EXPECT_EQ(response, std::string("\x08\x01", 2)) << socket;
  }
}

}  // namespace
}  // namespace canhazgpu::kubeletplugin
