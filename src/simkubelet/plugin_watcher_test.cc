// The plugin watcher against a real PluginServer on unix sockets.
#include "simkubelet/plugin_watcher.h"

#include <chrono>

#include "gtest/gtest.h"
#include "kubeletplugin/plugin_server.h"
#include "kubeletplugin/testing/plugin_harness.h"

namespace canhazgpu::simkubelet {
namespace {

using std::chrono::seconds;

TEST(PluginWatcherTest, RegistersWhenTheSocketAppearsAgainWhenRecreatedAndForgetsWhenRemoved) {
  kubeletplugin::testing::PluginHarness harness;
  PluginWatcher watcher({.registrar_dir = harness.Options().registrar_dir});
  ASSERT_TRUE(watcher.Start().ok());
  EXPECT_EQ(watcher.Get(kubeletplugin::kDriverName), nullptr);

  auto server = harness.Start(harness.Options());
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(watcher.WaitForRegistrations(kubeletplugin::kDriverName, 1, seconds(30)));
  ASSERT_NE(watcher.Get(kubeletplugin::kDriverName), nullptr);
  EXPECT_EQ(watcher.Get(kubeletplugin::kDriverName)->service(), "v1.DRAPlugin");
  ASSERT_TRUE((*server)->registration_status().has_value());
  EXPECT_TRUE((*server)->registration_status()->registered);

  // The daemon stops: its socket goes, and so does the plugin.
  (*server)->Shutdown();
  ASSERT_TRUE(watcher.WaitForRegistrations(kubeletplugin::kDriverName, 0, seconds(30)));
  EXPECT_EQ(watcher.Get(kubeletplugin::kDriverName), nullptr);

  // It starts again: a new socket, a new registration.
  server->reset();
  auto again = harness.Start(harness.Options());
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE(watcher.WaitForRegistrations(kubeletplugin::kDriverName, 2, seconds(30)));
  EXPECT_EQ(watcher.Registrations(kubeletplugin::kDriverName), 2);
  auto result = watcher.Get(kubeletplugin::kDriverName)
                    ->NodeUnprepareResources({{.namespace_name = "ml", .uid = "u1", .name = "c1"}});
  EXPECT_TRUE(result.ok()) << result.status();
}

TEST(PluginWatcherTest, RegistersASocketThatWasThereBeforeItStarted) {
  kubeletplugin::testing::PluginHarness harness;
  auto server = harness.Start(harness.Options());
  ASSERT_TRUE(server.ok()) << server.status();
  PluginWatcher watcher({.registrar_dir = harness.Options().registrar_dir});
  ASSERT_TRUE(watcher.Start().ok());
  EXPECT_TRUE(watcher.WaitForRegistrations(kubeletplugin::kDriverName, 1, seconds(30)));
}

}  // namespace
}  // namespace canhazgpu::simkubelet
