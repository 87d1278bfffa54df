// Events sent from a thread of their own. A caller on a latency path (a
// prepare the kubelet waits for) hands an Event over and goes on: an API
// server that is slow, refuses or is down delays or loses Events, never the
// caller. At most `capacity` Events wait; more are dropped and counted.
// Failures are logged, one line each. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "core/log.h"
#include "core/mutex.h"
#include "kube/events.h"

namespace canhazgpu::kube {

class EventQueue {
 public:
  // `recorder` must outlive the queue.
  EventQueue(EventRecorder& recorder, Log log, size_t capacity = 256);
  ~EventQueue();
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  // Queues the Event (see EventRecorder::Record); returns at once.
  void Post(const EventObjectReference& about, std::string_view type, std::string reason,
            std::string message);
  // Waits until everything posted so far was sent or failed; false on timeout.
  bool Flush(std::chrono::milliseconds timeout);
  // Sends what is queued within `grace`, then stops; later posts are dropped.
  void Stop(std::chrono::milliseconds grace = std::chrono::seconds(1));
  int64_t dropped() const { return dropped_; }

 private:
  struct Pending {
    EventObjectReference about;
    std::string type;
    std::string reason;
    std::string message;
  };
  void Run();

  EventRecorder& recorder_;
  const Log log_;
  const size_t capacity_;
  Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  bool sending_ ABSL_GUARDED_BY(mu_) = false;  // one taken from pending_ and not yet done
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<int64_t> dropped_{0};
  std::thread thread_;
};

}  // namespace canhazgpu::kube
