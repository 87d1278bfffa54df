// The plugin watcher against a real PluginServer on unix sockets.
#include "simkubelet/plugin_watcher.h"

#include <chrono>

#include "daemon/plugin_server.h"
#include "daemon/testing/plugin_harness.h"
#include "gtest/gtest.h"

namespace canhazgpu::simkubelet {
namespace {

using std::chrono::seconds;

TEST(PluginWatcherTest, RegistersWhenTheSocketAppearsAgainWhenRecreatedAndForgetsWhenRemoved) {
  daemon::testing::PluginHarness harness;
  PluginWatcher watcher({.registrar_dir = harness.Options().registrar_dir});
  ASSERT_TRUE(watcher.Start().ok());
  EXPECT_EQ(watcher.Get(daemon::kDriverName), nullptr);

  auto server = harness.Start(harness.Options());
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(watcher.WaitForRegistrations(daemon::kDriverName, 1, seconds(30)));
  ASSERT_NE(watcher.Get(daemon::kDriverName), nullptr);
  EXPECT_EQ(watcher.Get(daemon::kDriverName)->service(), "v1.DRAPlugin");
  ASSERT_TRUE((*server)->registration_status().has_value());
  EXPECT_TRUE((*server)->registration_status()->registered);

  // The daemon stops: its socket goes, and so does the plugin.
  (*server)->Shutdown();
  ASSERT_TRUE(watcher.WaitForRegistrations(daemon::kDriverName, 0, seconds(30)));
  EXPECT_EQ(watcher.Get(daemon::kDriverName), nullptr);

  // It starts again: a new socket, a new registration.
  server->reset();
  auto again = harness.Start(harness.Options());
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE(watcher.WaitForRegistrations(daemon::kDriverName, 2, seconds(30)));
  EXPECT_EQ(watcher.Registrations(daemon::kDriverName), 2);
  auto result = watcher.Get(daemon::kDriverName)
                    ->NodeUnprepareResources({{.namespace_name = "ml", .uid = "u1", .name = "c1"}});
  EXPECT_TRUE(result.ok()) << result.status();
}

TEST(PluginWatcherTest, RegistersASocketThatWasThereBeforeItStarted) {
  daemon::testing::PluginHarness harness;
  auto server = harness.Start(harness.Options());
  ASSERT_TRUE(server.ok()) << server.status();
  PluginWatcher watcher({.registrar_dir = harness.Options().registrar_dir});
  ASSERT_TRUE(watcher.Start().ok());
  EXPECT_TRUE(watcher.WaitForRegistrations(daemon::kDriverName, 1, seconds(30)));
}

}  // namespace
}  // namespace canhazgpu::simkubelet
