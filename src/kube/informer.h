// A local cache of one resource kept current by list + watch, as client-go's
// informers: handlers hear every add, update and delete; WaitForSync says
// when the first list is in. A watch that falls out of the server's window
// (410 Gone) lists again and turns the difference into handler calls, so
// no change is lost. The node daemon and the CLI use it instead of polling.
// Thread-safe: handlers run on the informer's thread, one at a time; the
// cache may be read from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "kube/client.h"
#include "kube/stop_pipe.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kube {

struct InformerHandlers {
  std::function<void(const nlohmann::json& object)> on_add;
  std::function<void(const nlohmann::json& old, const nlohmann::json& now)> on_update;
  std::function<void(const nlohmann::json& object)> on_delete;
};

class Informer {
 public:
  // `ns` empty: every namespace. `selectors` filters by label and field.
  Informer(Client& client, ResourceRef ref, std::string ns, ListOptions selectors,
           InformerHandlers handlers);
  ~Informer();

  void Start();
  // Ends the watch and joins the thread: at once, even when the server
  // sends nothing more (the watch polls a StopPipe with its connection).
  void Stop();
  // True once the first list has been delivered; false on timeout.
  bool WaitForSync(std::chrono::milliseconds timeout);

  std::optional<nlohmann::json> Get(const std::string& ns, const std::string& name) const;
  std::vector<nlohmann::json> List() const;
  size_t size() const;
  // How many times it listed (1 + the re-lists after 410 Gone).
  int lists() const { return lists_; }

 private:
  static std::string Key(const nlohmann::json& object);
  void Run();
  // Replaces the cache with `items`, telling the handlers what changed.
  void Replace(const nlohmann::json& items);
  void Apply(const WatchEvent& event);

  Client& client_;
  ResourceRef ref_;
  std::string ns_;
  ListOptions selectors_;
  InformerHandlers handlers_;
  mutable Mutex mu_;
  std::condition_variable_any synced_cv_;
  std::map<std::string, nlohmann::json> cache_ ABSL_GUARDED_BY(mu_);  // "ns/name" -> object
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  StopPipe stop_;
  std::atomic<int> lists_{0};
  std::thread thread_;
};

}  // namespace canhazgpu::kube
