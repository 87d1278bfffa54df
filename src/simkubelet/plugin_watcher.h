// The kubelet's plugin watcher for DRA drivers: watches the registrar
// directory (inotify, as the kubelet's fsnotify), registers each plugin
// whose registration socket appears there — also those present at start —
// through kubeletplugin::KubeletClient::Register, registers it again when the
// socket is created anew (the driver restarted), and forgets it when the
// socket disappears. One client per driver name; the newest registration
// wins. For a plugin that serves DRAResourceHealth, a HealthStream keeps
// its devices' health in the given cache.
//
// Threading: one watcher thread does the registrations; Get() and the
// waits may be called from any thread. Clients are shared_ptrs, so a call
// in flight keeps a replaced client alive.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "core/mutex.h"
#include "kubeletplugin/kubelet_client.h"
#include "simkubelet/device_health.h"

namespace canhazgpu::simkubelet {

struct PluginWatcherOptions {
  std::string registrar_dir;
  kubeletplugin::KubeletClientOptions client;
  // After a driver was registered or forgotten (on the watcher thread).
  std::function<void(const std::string& driver)> on_change = [](const std::string&) {};
  std::function<void(const std::string&)> log = [](const std::string&) {};
  // Where the plugins' device health goes (DRAResourceHealth, for plugins
  // that serve it); null: not watched.
  DeviceHealthCache* health = nullptr;
  // After a driver's device health changed (on a health stream's thread).
  std::function<void(const std::string& driver)> on_health_change = [](const std::string&) {};
};

class PluginWatcher {
 public:
  explicit PluginWatcher(PluginWatcherOptions options);
  ~PluginWatcher();
  PluginWatcher(const PluginWatcher&) = delete;
  PluginWatcher& operator=(const PluginWatcher&) = delete;

  // Creates the directory if needed (as the kubelet does), starts watching
  // and registers the sockets already there.
  absl::Status Start();
  // Stops watching and joins the thread; the clients stay usable.
  void Stop();

  // The driver's client; null when it is not registered.
  std::shared_ptr<kubeletplugin::KubeletClient> Get(const std::string& driver) const;
  // How many times `driver` was registered so far.
  int Registrations(const std::string& driver) const;
  // Waits until `driver` was registered `count` times and is registered
  // now (count 0: until it is not registered); false on timeout.
  bool WaitForRegistrations(const std::string& driver, int count,
                            std::chrono::milliseconds timeout) const;

 private:
  void Run();
  void SocketAppeared(const std::string& path);
  void SocketRemoved(const std::string& path);

  PluginWatcherOptions options_;
  int inotify_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd that ends the watcher's poll
  std::thread thread_;
  mutable Mutex mu_;
  mutable std::condition_variable_any changed_;
  struct Plugin {
    std::string socket;
    std::shared_ptr<kubeletplugin::KubeletClient> client;
  };
  std::map<std::string, Plugin> plugins_ ABSL_GUARDED_BY(mu_);     // by driver name
  std::map<std::string, int> registrations_ ABSL_GUARDED_BY(mu_);  // by driver name
  // By driver name; used by the watcher thread only (and Stop after it).
  std::map<std::string, std::unique_ptr<HealthStream>> health_streams_;
};

}  // namespace canhazgpu::simkubelet
