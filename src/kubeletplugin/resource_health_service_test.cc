// The DRAResourceHealth stream (v1 and v1alpha1): KubeletClient::WatchResources
// against a PluginServer whose HealthSource is a HealthBoard.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kubeletplugin/kubelet_client.h"
#include "kubeletplugin/plugin_server.h"
#include "kubeletplugin/testing/plugin_harness.h"

namespace canhazgpu::kubeletplugin {
namespace {

using testing::PluginHarness;
using State = driver::DeviceHealth::State;

constexpr std::chrono::seconds kHealthWait{10};  // bound on waiting for a condition

// The updates a watch received, for the test thread to wait on.
class Updates {
 public:
  // Stops the watch (returns false) once `stop_after` updates arrived.
  KubeletClient::HealthUpdate Recorder(size_t stop_after = SIZE_MAX) {
    return [this, stop_after](const std::vector<driver::DeviceHealth>& devices) {
      std::lock_guard<std::mutex> lock(mu_);
      received_.push_back(devices);
      changed_.notify_all();
      return received_.size() < stop_after;
    };
  }

  // The first `count` updates, or fewer after kHealthWait.
  std::vector<std::vector<driver::DeviceHealth>> WaitFor(size_t count) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, kHealthWait, [&] { return received_.size() >= count; });
    return received_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::vector<driver::DeviceHealth>> received_;
};

class ResourceHealthServiceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    harness_.health.Set({Device("gpu-0", State::kHealthy), Device("gpu-1", State::kHealthy)});
    auto server = harness_.Start(harness_.Options());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    KubeletClientOptions options;
    options.health_services = {GetParam()};
    auto client = KubeletClient::Register(server_->registration_socket(), options);
    ASSERT_TRUE(client.ok()) << client.status();
    ASSERT_EQ((*client)->health_service(), GetParam());
    kubelet_ = std::move(*client);
  }

  // A failed assertion leaves the watch running; stopping the server ends it.
  void TearDown() override {
    if (watch_.joinable()) {
      server_->Shutdown();
      watch_.join();
    }
  }

  // Runs WatchResources on its own thread; Join() returns its status.
  void Watch(KubeletClient::HealthUpdate on_update) {
    watch_ =
        std::thread([this, on_update] { watch_status_ = kubelet_->WatchResources(on_update); });
  }
  absl::Status Join() {
    watch_.join();
    return watch_status_;
  }

  static driver::DeviceHealth Device(const std::string& name, State state) {
    return {.pool = "node-a",
            .device = name,
            .state = state,
            .last_updated_unix = 1'790'000'000,
            .timeout_seconds = 45,
            .message = state == State::kUnhealthy ? "XID 79: fallen off the bus" : ""};
  }

  PluginHarness harness_;
  std::unique_ptr<PluginServer> server_;
  std::unique_ptr<KubeletClient> kubelet_;
  std::thread watch_;
  absl::Status watch_status_;
};

INSTANTIATE_TEST_SUITE_P(Versions, ResourceHealthServiceTest,
                         ::testing::Values("v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"),
                         [](const auto& info) {
                           return info.param.substr(0, info.param.find('.'));
                         });

TEST_P(ResourceHealthServiceTest, SendsTheFullListThenEachChangeAndEndsAtShutdown) {
  Updates updates;
  Watch(updates.Recorder());
  auto first = updates.WaitFor(1);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].size(), 2u);
  EXPECT_EQ(first[0][0].pool, "node-a");
  EXPECT_EQ(first[0][0].device, "gpu-0");
  EXPECT_EQ(first[0][0].state, State::kHealthy);
  EXPECT_EQ(first[0][0].last_updated_unix, 1'790'000'000);
  EXPECT_EQ(first[0][0].timeout_seconds, 45);

  harness_.health.Set({Device("gpu-0", State::kHealthy), Device("gpu-1", State::kUnhealthy)});
  auto second = updates.WaitFor(2);
  ASSERT_EQ(second.size(), 2u);
  // The complete list again, not only the device that changed.
  ASSERT_EQ(second[1].size(), 2u);
  EXPECT_EQ(second[1][0].state, State::kHealthy);
  EXPECT_EQ(second[1][1].state, State::kUnhealthy);
  EXPECT_EQ(second[1][1].message, "XID 79: fallen off the bus");

  server_->Shutdown();
  EXPECT_TRUE(Join().ok()) << watch_status_;
}

TEST_P(ResourceHealthServiceTest, CarriesUnknownState) {
  harness_.health.Set({Device("gpu-0", State::kUnknown)});
  Updates updates;
  Watch(updates.Recorder(/*stop_after=*/1));
  EXPECT_TRUE(Join().ok()) << watch_status_;
  auto received = updates.WaitFor(1);
  ASSERT_EQ(received.size(), 1u);
  ASSERT_EQ(received[0].size(), 1u);
  EXPECT_EQ(received[0][0].state, State::kUnknown);
}

TEST_P(ResourceHealthServiceTest, KubeletStoppingTheWatchIsOk) {
  Updates updates;
  Watch(updates.Recorder(/*stop_after=*/1));
  EXPECT_TRUE(Join().ok()) << watch_status_;
  EXPECT_EQ(updates.WaitFor(1).size(), 1u);
}

TEST_P(ResourceHealthServiceTest, CancelWatchesEndsTheStream) {
  Updates updates;
  Watch(updates.Recorder());
  ASSERT_EQ(updates.WaitFor(1).size(), 1u);
  kubelet_->CancelWatches();
  EXPECT_TRUE(Join().ok()) << watch_status_;
}

}  // namespace
}  // namespace canhazgpu::kubeletplugin
