// The remote hosts' lines of the dashboard's overview (/api/hosts). Asking
// them is slow (ssh, up to the remote timeout), so it happens on a thread of
// its own, and only on demand: a request gets the latest answer at once and,
// when that is older than `max_age`, wakes the thread to ask again; only the
// first request ever waits for an answer. However many viewers there are,
// the hosts are asked at most once per `max_age`, and not at all while
// nobody looks; no server thread waits on a slow host after the first.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <optional>
#include <thread>

#include "core/mutex.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::web {

class HostsCache {
 public:
  using Collect = std::function<nlohmann::ordered_json()>;
  HostsCache(Collect collect, std::chrono::steady_clock::duration max_age);
  // Waits for a collection under way (at most the remote timeout).
  ~HostsCache();
  HostsCache(const HostsCache&) = delete;
  HostsCache& operator=(const HostsCache&) = delete;

  // The latest answer, asking for a fresh one when it is older than
  // max_age; the first call waits for the first answer.
  nlohmann::ordered_json Get();

 private:
  void Loop();

  const Collect collect_;
  const std::chrono::steady_clock::duration max_age_;
  Mutex mu_;
  std::condition_variable_any cv_;
  bool wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<nlohmann::ordered_json> latest_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point at_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: starts once the rest is set up
};

}  // namespace canhazgpu::web
