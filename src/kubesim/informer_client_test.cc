// kube::Informer against the simulated API server over real HTTP: the
// list, then every change through the watch, and a new list when the
// server's window has moved past it.
#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kubesim/testing/test_api_server.h"
#include "kubesim/testing/test_client.h"

namespace canhazgpu::kube {
namespace {

using nlohmann::json;

using kubesim::ConnectTestClient;
using kubesim::EventuallyTrue;
using Sim = kubesim::TestApiServer;

json InformedConfigMap(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}};
}

// What an informer's handlers heard, in order.
struct Heard {
  std::mutex mu;
  std::vector<std::string> events;
  void Add(const std::string& e) {
    std::lock_guard lock(mu);
    events.push_back(e);
  }
  bool Has(const std::string& e) {
    std::lock_guard lock(mu);
    return std::find(events.begin(), events.end(), e) != events.end();
  }
};

InformerHandlers Record(Heard& heard, std::function<void(const json&)> on_add_hook = nullptr) {
  return {.on_add =
              [&heard, on_add_hook](const json& o) {
                if (on_add_hook) on_add_hook(o);
                heard.Add("add " + o["metadata"]["name"].get<std::string>());
              },
          .on_update =
              [&heard](const json&, const json& o) {
                heard.Add("update " + o["metadata"]["name"].get<std::string>());
              },
          .on_delete =
              [&heard](const json& o) {
                heard.Add("delete " + o["metadata"]["name"].get<std::string>());
              }};
}

TEST(KubeInformerTest, ListsThenFollowsEveryChange) {
  Sim sim;
  auto client = ConnectTestClient(sim.Config());
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", InformedConfigMap(name)).ok());
  }
  Heard heard;
  Informer informer(*client, kConfigMaps, "default", {}, Record(heard));
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(20)));
  EXPECT_EQ(informer.size(), 2u);
  EXPECT_TRUE(heard.Has("add a"));

  ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", InformedConfigMap("c")).ok());
  ASSERT_TRUE(
      client->Patch(kConfigMaps, "default", "a", PatchType::kMerge, {{"data", {{"x", "1"}}}}).ok());
  ASSERT_TRUE(client->Delete(kConfigMaps, "default", "b").ok());
  EXPECT_TRUE(EventuallyTrue([&] { return heard.Has("delete b"); }));
  EXPECT_TRUE(heard.Has("add c"));
  EXPECT_TRUE(heard.Has("update a"));
  EXPECT_EQ(informer.Get("default", "a").value()["data"]["x"], "1");
  EXPECT_FALSE(informer.Get("default", "b").has_value());
  EXPECT_EQ(informer.lists(), 1);
  informer.Stop();
}

// The watch is cut while the informer is busy and the server's window moves
// past it: it lists again, and the difference reaches the handlers.
TEST(KubeInformerTest, RelistsAfterGoneAndMissesNothing) {
  Sim sim;
  auto client = ConnectTestClient(sim.Config());
  ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", InformedConfigMap("old")).ok());
  std::atomic<bool> release{false};
  Heard heard;
  Informer informer(*client, kConfigMaps, "default", {}, Record(heard, [&](const json& o) {
    if (o["metadata"]["name"] == "block") {
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }));
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(20)));
  ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", InformedConfigMap("block")).ok());
  // The informer now sits in the handler of `block` (the cache has it).
  ASSERT_TRUE(EventuallyTrue([&] { return informer.Get("default", "block").has_value(); }));
  sim.DropWatches();
  sim.store().set_event_window(1);
  for (const char* name : {"n1", "n2", "n3"}) {
    ASSERT_TRUE(client->CreateObject(kConfigMaps, "default", InformedConfigMap(name)).ok());
  }
  ASSERT_TRUE(client->Delete(kConfigMaps, "default", "old").ok());
  release = true;
  EXPECT_TRUE(EventuallyTrue([&] { return heard.Has("delete old") && heard.Has("add n3"); }));
  EXPECT_TRUE(heard.Has("add n1"));
  EXPECT_GE(informer.lists(), 2);
  EXPECT_EQ(informer.size(), 4u);  // block, n1, n2, n3
  informer.Stop();
}

}  // namespace
}  // namespace canhazgpu::kube
