// Stopping a watch, a log stream and an informer while the server sends
// nothing more. Given only a StopPipe, the client waits on the connection
// and the pipe for up to ten minutes at a time, so these pass only if the
// stop itself wakes it: each test waits for the call to return (bounded by
// a long guard against hanging), and measures no delay.
#include <atomic>
#include <chrono>
#include <future>

#include "gtest/gtest.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/stop_pipe.h"
#include "kubesim/testing/test_api_server.h"
#include "kubesim/testing/test_client.h"

namespace canhazgpu::kube {
namespace {

using kubesim::ConnectTestClient;
using kubesim::EventuallyTrue;
using kubesim::TestApiServer;
using nlohmann::json;

// Far below the client's ten-minute wait, far above a stop's milliseconds.
constexpr auto kHangGuard = std::chrono::minutes(2);

// A server that sends nothing unasked: no bookmark every ten seconds (it
// would wake the client, and the stop would be noticed then).
kubesim::ApiServerOptions QuietServer() {
  kubesim::ApiServerOptions options;
  options.bookmark_seconds = 24 * 3600;
  return options;
}

json NamedConfigMap(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}};
}

TEST(KubeStopTest, AStoppedWatchEndsThoughTheServerSendsNothingMore) {
  TestApiServer sim(QuietServer());
  auto client = ConnectTestClient(sim.Config());
  ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", NamedConfigMap("only")).ok());
  StopPipe stop;
  std::atomic<bool> seen{false};
  std::future<absl::Status> watched = std::async(std::launch::async, [&] {
    return client->Watch(kConfigMaps, "default", {.stop = &stop}, [&](const WatchEvent&) {
      seen = true;
      return true;
    });
  });
  // The stream is open and quiet: its one event is in.
  ASSERT_TRUE(EventuallyTrue([&] { return seen.load(); }));
  stop.Stop();
  ASSERT_EQ(watched.wait_for(kHangGuard), std::future_status::ready);
  EXPECT_TRUE(watched.get().ok());
}

TEST(KubeStopTest, AStoppedLogFollowEndsThoughTheContainerWritesNothingMore) {
  TestApiServer sim(QuietServer());
  auto client = ConnectTestClient(sim.Config());
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "p"}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  ASSERT_TRUE(client->CreateObject(kPods, "default", pod).ok());
  sim.server().logs().Append("default", "p", "c", "hello\n");
  StopPipe stop;
  std::atomic<bool> reading{false};
  std::future<absl::Status> followed = std::async(std::launch::async, [&] {
    return client->StreamLogs("default", "p", {.follow = true, .stop = &stop},
                              [&](std::string_view) {
                                reading = true;
                                return true;
                              });
  });
  ASSERT_TRUE(EventuallyTrue([&] { return reading.load(); }));
  stop.Stop();
  ASSERT_EQ(followed.wait_for(kHangGuard), std::future_status::ready);
  EXPECT_TRUE(followed.get().ok());
}

TEST(KubeStopTest, InformerStopEndsItsQuietWatch) {
  TestApiServer sim(QuietServer());
  auto client = ConnectTestClient(sim.Config());
  ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", NamedConfigMap("only")).ok());
  Informer informer(*client, kConfigMaps, "default", {}, {});
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(20)));
  // An object made after the list reaches the cache through the watch: the
  // watch is open, and then quiet.
  ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", NamedConfigMap("later")).ok());
  ASSERT_TRUE(EventuallyTrue([&] { return informer.Get("default", "later").has_value(); }));
  std::future<void> stopped = std::async(std::launch::async, [&] { informer.Stop(); });
  ASSERT_EQ(stopped.wait_for(kHangGuard), std::future_status::ready);
}

}  // namespace
}  // namespace canhazgpu::kube
