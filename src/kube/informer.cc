#include "kube/informer.h"

#include "core/strings.h"

namespace canhazgpu::kube {

using nlohmann::json;

Informer::Informer(Client& client, ResourceRef ref, std::string ns, ListOptions selectors,
                   InformerHandlers handlers)
    : client_(client),
      ref_(std::move(ref)),
      ns_(std::move(ns)),
      selectors_(std::move(selectors)),
      handlers_(std::move(handlers)) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  stop_.Stop();
  if (thread_.joinable()) thread_.join();
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return synced_cv_.wait_for(lock, timeout,
                             [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return synced_; });
}

std::string Informer::Key(const json& object) {
  return StrCat(object.value("/metadata/namespace"_json_pointer, std::string()), "/",
                object.value("/metadata/name"_json_pointer, std::string()));
}

std::optional<json> Informer::Get(const std::string& ns, const std::string& name) const {
  MutexLock lock(mu_);
  auto it = cache_.find(StrCat(ref_.namespaced ? ns : "", "/", name));
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

std::vector<json> Informer::List() const {
  MutexLock lock(mu_);
  std::vector<json> out;
  out.reserve(cache_.size());
  for (const auto& [key, object] : cache_) out.push_back(object);
  return out;
}

size_t Informer::size() const {
  MutexLock lock(mu_);
  return cache_.size();
}

void Informer::Replace(const json& items) {
  std::map<std::string, json> next;
  for (const json& item : items) next.emplace(Key(item), item);
  std::map<std::string, json> previous;
  {
    MutexLock lock(mu_);
    previous.swap(cache_);
    cache_ = next;
  }
  for (const auto& [key, object] : previous) {
    if (!next.contains(key) && handlers_.on_delete) handlers_.on_delete(object);
  }
  for (const auto& [key, object] : next) {
    auto old = previous.find(key);
    if (old == previous.end()) {
      if (handlers_.on_add) handlers_.on_add(object);
    } else if (old->second != object && handlers_.on_update) {
      handlers_.on_update(old->second, object);
    }
  }
  {
    MutexLock lock(mu_);
    synced_ = true;
  }
  synced_cv_.notify_all();
}

void Informer::Apply(const WatchEvent& event) {
  const std::string key = Key(event.object);
  std::optional<json> old;
  {
    MutexLock lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) old = it->second;
    if (event.type == "DELETED") {
      cache_.erase(key);
    } else {
      cache_[key] = event.object;
    }
  }
  if (event.type == "DELETED") {
    if (handlers_.on_delete) handlers_.on_delete(event.object);
  } else if (old) {
    if (handlers_.on_update) handlers_.on_update(*old, event.object);
  } else if (handlers_.on_add) {
    handlers_.on_add(event.object);
  }
}

void Informer::Run() {
  int failures = 0;
  while (!stop_.stopped()) {
    absl::StatusOr<json> list = client_.ListAll(ref_, ns_, selectors_);
    if (!list.ok()) {
      // Back off and list again; the cache keeps its last state meanwhile.
      const int wait_ms = std::min(100 << std::min(failures++, 6), 5000);
      for (int waited = 0; waited < wait_ms && !stop_.stopped(); waited += 50) {
        client_.clock().SleepFor(std::chrono::milliseconds(50));
      }
      continue;
    }
    failures = 0;
    ++lists_;
    Replace((*list)["items"]);
    WatchOptions watch{
        .label_selector = selectors_.label_selector,
        .field_selector = selectors_.field_selector,
        .resource_version = (*list).value("/metadata/resourceVersion"_json_pointer, std::string()),
        .stop = &stop_};
    absl::Status watched = client_.Watch(ref_, ns_, watch, [&](const WatchEvent& event) {
      if (event.type != "BOOKMARK") Apply(event);
      return !stop_.stopped();
    });
    // Gone or any other end: list again (a list is the only way back in
    // step after missed events).
    (void)watched;
  }
}

}  // namespace canhazgpu::kube
