// Registration as the kubelet does it: KubeletClient::Register against a
// PluginServer on real unix sockets.
#include <mutex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubeletplugin/kubelet_client.h"
#include "kubeletplugin/plugin_server.h"
#include "kubeletplugin/testing/plugin_harness.h"

namespace canhazgpu::kubeletplugin {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::PluginHarness;

TEST(RegistrationTest, KubeletGetsPluginInfoAndPicksV1) {
  PluginHarness harness;
  auto server = harness.Start(harness.Options());
  ASSERT_TRUE(server.ok()) << server.status();

  auto client = KubeletClient::Register((*server)->registration_socket());
  ASSERT_TRUE(client.ok()) << client.status();
  const PluginInfo& info = (*client)->plugin();
  EXPECT_EQ(info.type, "DRAPlugin");
  EXPECT_EQ(info.name, "gpu.canhazgpu.dev");
  EXPECT_EQ(info.endpoint, harness.dir.path() + "/plugins/gpu.canhazgpu.dev/dra.sock");
  EXPECT_THAT(info.supported_versions,
              ElementsAre("v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth",
                          "v1alpha1.DRAResourceHealth"));
  EXPECT_EQ((*client)->service(), "v1.DRAPlugin");
  EXPECT_EQ((*client)->health_service(), "v1.DRAResourceHealth");

  std::optional<RegistrationStatus> status = (*server)->registration_status();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->registered);
  EXPECT_EQ(status->error, "");
}

TEST(RegistrationTest, RegistrationSocketIsNamedAfterTheDriver) {
  PluginHarness harness;
  auto server = harness.Start(harness.Options());
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->registration_socket(),
            harness.dir.path() + "/registry/gpu.canhazgpu.dev-reg.sock");
}

TEST(RegistrationTest, PluginOfferingOnlyV1beta1GetsV1beta1) {
  PluginHarness harness;
  PluginServerOptions options = harness.Options();
  options.supported_versions = {"v1beta1.DRAPlugin"};
  auto server = harness.Start(options);
  ASSERT_TRUE(server.ok()) << server.status();

  auto client = KubeletClient::Register((*server)->registration_socket());
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->service(), "v1beta1.DRAPlugin");
  EXPECT_EQ((*client)->health_service(), "");
}

TEST(RegistrationTest, ThePluginsOrderDecides) {
  PluginHarness harness;
  PluginServerOptions options = harness.Options();
  options.supported_versions = {"v1beta1.DRAPlugin", "v1.DRAPlugin"};
  auto server = harness.Start(options);
  ASSERT_TRUE(server.ok()) << server.status();

  auto client = KubeletClient::Register((*server)->registration_socket());
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->service(), "v1beta1.DRAPlugin");
}

TEST(RegistrationTest, OlderKubeletSpeakingOnlyV1beta1GetsV1beta1) {
  PluginHarness harness;
  auto server = harness.Start(harness.Options());
  ASSERT_TRUE(server.ok()) << server.status();

  KubeletClientOptions kubelet_1_33;
  kubelet_1_33.dra_services = {"v1beta1.DRAPlugin"};
  kubelet_1_33.health_services = {"v1alpha1.DRAResourceHealth"};
  auto client = KubeletClient::Register((*server)->registration_socket(), kubelet_1_33);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->service(), "v1beta1.DRAPlugin");
  EXPECT_EQ((*client)->health_service(), "v1alpha1.DRAResourceHealth");
}

TEST(RegistrationTest, PluginWithoutCommonVersionIsRefusedAndTold) {
  PluginHarness harness;
  PluginServerOptions options = harness.Options();
  options.supported_versions = {"v1alpha4.DRAPlugin"};
  std::mutex mu;  // the callback runs on a gRPC thread
  std::vector<RegistrationStatus> notified;
  options.on_registration_status = [&](const RegistrationStatus& s) {
    std::lock_guard<std::mutex> lock(mu);
    notified.push_back(s);
  };
  auto server = harness.Start(options);
  ASSERT_TRUE(server.ok()) << server.status();

  auto client = KubeletClient::Register((*server)->registration_socket());
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(client.status().message(), HasSubstr("v1alpha4.DRAPlugin"));

  // The kubelet's NotifyRegistrationStatus returned before Register did.
  std::optional<RegistrationStatus> status = (*server)->registration_status();
  ASSERT_TRUE(status.has_value());
  EXPECT_FALSE(status->registered);
  EXPECT_EQ(status->error, client.status().message());
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(notified.size(), 1u);
  EXPECT_FALSE(notified[0].registered);
}

TEST(RegistrationTest, PluginWithoutHealthSourceAdvertisesNoHealthService) {
  PluginHarness harness;
  auto server = harness.Start(harness.Options(), /*with_health=*/false);
  ASSERT_TRUE(server.ok()) << server.status();

  auto client = KubeletClient::Register((*server)->registration_socket());
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_THAT((*client)->plugin().supported_versions,
              ElementsAre("v1.DRAPlugin", "v1beta1.DRAPlugin"));
  absl::Status watch = (*client)->WatchResources([](const auto&) { return true; });
  EXPECT_EQ(watch.code(), absl::StatusCode::kFailedPrecondition);
}

TEST(RegistrationTest, NoPluginListeningIsUnavailable) {
  testing::TempDir dir;
  KubeletClientOptions options;
  options.dial_timeout = std::chrono::milliseconds(50);
  auto client = KubeletClient::Register(dir.path() + "/nobody-reg.sock", options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(client.status().message(), HasSubstr("nobody-reg.sock"));
}

}  // namespace
}  // namespace canhazgpu::kubeletplugin
