#include "cli/k8shazgpu/pod_watch.h"

#include <algorithm>
#include <tuple>

#include "cli/k8shazgpu/run_objects.h"
#include "core/clock.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {

using nlohmann::json;

namespace {

std::string Field(const json& object, const char* pointer) {
  return object.value(json::json_pointer(pointer), std::string());
}

bool WaitsForGpus(const json& pod) {
  return Field(pod, "/spec/nodeName").empty() &&
         Field(pod, "/metadata/deletionTimestamp").empty() &&
         (Field(pod, "/status/phase").empty() || Field(pod, "/status/phase") == "Pending");
}

auto LineKey(const json& pod) {
  return std::make_tuple(Field(pod, "/metadata/creationTimestamp"),
                         Field(pod, "/metadata/namespace"), Field(pod, "/metadata/name"));
}

}  // namespace

QueuePlace PlaceInLine(const std::vector<json>& runs, const json& pod) {
  std::vector<json> pending;
  for (const json& r : runs) {
    if (WaitsForGpus(r)) pending.push_back(r);
  }
  std::sort(pending.begin(), pending.end(),
            [](const json& a, const json& b) { return LineKey(a) < LineKey(b); });
  QueuePlace place{.position = 0, .of = static_cast<int>(pending.size())};
  for (size_t i = 0; i < pending.size(); ++i) {
    if (Field(pending[i], "/metadata/uid") == Field(pod, "/metadata/uid")) {
      place.position = static_cast<int>(i) + 1;
    }
  }
  return place;
}

PodWatch::PodWatch(kube::Client& client, std::string ns, std::string pod, bool all_namespaces)
    : client_(client), ns_(std::move(ns)), pod_(std::move(pod)), all_namespaces_(all_namespaces) {}

PodWatch::~PodWatch() {
  // Each stop ends its quiet watch at once (Informer::Stop).
  if (events_) events_->Stop();
  if (runs_) runs_->Stop();
}

void PodWatch::Changed() {
  MutexLock lock(mu_);
  ++changes_;
  changed_cv_.notify_all();
}

absl::Status PodWatch::Start(std::chrono::milliseconds timeout) {
  auto ours = [this](const json& o) {
    return Field(o, "/metadata/name") == pod_ && Field(o, "/metadata/namespace") == ns_;
  };
  kube::InformerHandlers runs{
      .on_add = [this](const json&) { Changed(); },
      .on_update = [this](const json&, const json&) { Changed(); },
      .on_delete =
          [this, ours](const json& o) {
            if (ours(o)) {
              MutexLock lock(mu_);
              deleted_ = true;
            }
            Changed();
          },
  };
  runs_ = std::make_unique<kube::Informer>(client_, kube::kPods, all_namespaces_ ? "" : ns_,
                                           kube::ListOptions{.label_selector = kRunLabel},
                                           std::move(runs));
  runs_->Start();
  // The driver's prepare errors come as Events; a user who may not read
  // them still gets the pod's own status.
  const std::string about = StrCat("involvedObject.name=", pod_);
  if (client_.List(kube::kEvents, ns_, {.field_selector = about, .limit = 1}).ok()) {
    kube::InformerHandlers events{
        .on_add = [this](const json&) { Changed(); },
        .on_update = [this](const json&, const json&) { Changed(); },
        .on_delete = nullptr,
    };
    events_ = std::make_unique<kube::Informer>(
        client_, kube::kEvents, ns_, kube::ListOptions{.field_selector = about}, std::move(events));
    events_->Start();
  }
  if (!runs_->WaitForSync(timeout) || (events_ && !events_->WaitForSync(timeout))) {
    return absl::DeadlineExceededError(StrCat("could not list pods and events in ",
                                              timeout.count() / 1000, " s to follow pod ", pod_));
  }
  return absl::OkStatus();
}

std::optional<json> PodWatch::Pod() const {
  if (!runs_) return std::nullopt;
  return runs_->Get(ns_, pod_);
}

bool PodWatch::Deleted() const {
  MutexLock lock(mu_);
  return deleted_;
}

QueuePlace PodWatch::Place() const {
  std::optional<json> pod = Pod();
  if (!pod) return {};
  return PlaceInLine(runs_->List(), *pod);
}

std::string PodWatch::PrepareError() const {
  if (!events_) return "";
  std::string best_time, message;
  for (const json& e : events_->List()) {
    if (Field(e, "/reason") != "FailedPrepareDynamicResources") continue;
    std::string time = Field(e, "/lastTimestamp");
    if (time.empty()) time = Field(e, "/eventTime");
    if (message.empty() || time >= best_time) {
      best_time = time;
      message = Field(e, "/message");
    }
  }
  return message;
}

bool PodWatch::WaitForChange(std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
  MutexLock lock(mu_);
  const auto deadline = RealClock().MonoNow() + timeout;
  while (changes_ == seen_changes_) {
    if (cancel != nullptr && cancel->load()) return false;
    const auto now = RealClock().MonoNow();
    if (now >= deadline) return false;
    // A signal handler cannot notify a condition variable: look at the
    // flag at least every 100 ms.
    changed_cv_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(
                                   deadline - now, std::chrono::milliseconds(100)));
  }
  seen_changes_ = changes_;
  return true;
}

}  // namespace canhazgpu::cli::k8s
