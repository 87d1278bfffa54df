// Device health as the kubelet's DRA health cache keeps it: what each
// driver's NodeWatchResources stream last said about each of its devices,
// read back as the pod status's ResourceHealth ("Healthy", "Unhealthy",
// "Unknown" — also for a device without a report, or whose last report is
// older than its timeout, 30 s by default). HealthStream runs one driver's
// stream on its own thread, resuming it when it breaks.
//
// Threading: DeviceHealthCache is thread-safe; a HealthStream is created
// and destroyed on one thread (the destructor ends the stream and joins).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "driver/health_source.h"
#include "kubeletplugin/kubelet_client.h"

namespace canhazgpu::simkubelet {

class DeviceHealthCache {
 public:
  explicit DeviceHealthCache(const Clock& clock) : clock_(clock) {}

  // The complete list the driver just sent.
  void Replace(const std::string& driver, const std::vector<driver::DeviceHealth>& devices);
  // The driver is gone: its devices are Unknown.
  void Forget(const std::string& driver);
  std::string Health(const std::string& driver, const std::string& pool,
                     const std::string& device) const;

 private:
  const Clock& clock_;
  mutable Mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, driver::DeviceHealth> devices_
      ABSL_GUARDED_BY(mu_);
};

class HealthStream {
 public:
  // `on_change` runs on the stream's thread after each update.
  HealthStream(std::shared_ptr<kubeletplugin::KubeletClient> client, DeviceHealthCache& cache,
               std::function<void(const std::string& driver)> on_change);
  ~HealthStream();
  HealthStream(const HealthStream&) = delete;
  HealthStream& operator=(const HealthStream&) = delete;

 private:
  void Run();

  std::shared_ptr<kubeletplugin::KubeletClient> client_;
  DeviceHealthCache& cache_;
  std::function<void(const std::string&)> on_change_;
  Mutex mu_;
  std::condition_variable_any cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace canhazgpu::simkubelet
