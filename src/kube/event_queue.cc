#include "kube/event_queue.h"

#include "core/strings.h"

namespace canhazgpu::kube {

EventQueue::EventQueue(EventRecorder& recorder, Log log, size_t capacity)
    : recorder_(recorder), log_(std::move(log)), capacity_(capacity) {
  thread_ = std::thread([this] { Run(); });
}

EventQueue::~EventQueue() { Stop(); }

void EventQueue::Post(const EventObjectReference& about, std::string_view type, std::string reason,
                      std::string message) {
  {
    MutexLock lock(mu_);
    if (!stop_ && pending_.size() < capacity_) {
      pending_.push_back({.about = about,
                          .type = std::string(type),
                          .reason = std::move(reason),
                          .message = std::move(message)});
      cv_.notify_all();
      return;
    }
  }
  // Outside the lock: the log may be slow.
  if (dropped_.fetch_add(1) == 0) {
    log_.Warning(StrCat("event ", reason, " about ", about.kind, " ", about.name,
                        " dropped: too many events waiting for the API server"));
  }
}

bool EventQueue::Flush(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return cv_.wait_for(lock, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return pending_.empty() && !sending_;
  });
}

void EventQueue::Stop(std::chrono::milliseconds grace) {
  Flush(grace);
  {
    MutexLock lock(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
    dropped_ += static_cast<int64_t>(pending_.size());
    pending_.clear();
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void EventQueue::Run() {
  MutexLock lock(mu_);
  while (true) {
    cv_.wait(lock, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !pending_.empty(); });
    if (stop_) return;
    Pending next = std::move(pending_.front());
    pending_.pop_front();
    sending_ = true;
    lock.Unlock();
    absl::Status s = recorder_.Record(next.about, next.type, next.reason, next.message);
    if (!s.ok()) {
      log_.Warning(StrCat("cannot record event ", next.reason, " about ", next.about.kind, " ",
                          next.about.namespace_name.empty() ? "" : next.about.namespace_name + "/",
                          next.about.name, ": ", s.message()));
    }
    lock.Lock();
    sending_ = false;
    cv_.notify_all();
  }
}

}  // namespace canhazgpu::kube
