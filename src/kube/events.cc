#include "kube/events.h"

#include <cinttypes>
#include <cstdio>

#include "core/duration.h"
#include "core/strings.h"

namespace canhazgpu::kube {
namespace {

using nlohmann::json;

// client-go's correlator window: a repeat after this is a new Event.
constexpr auto kAggregationWindow = std::chrono::minutes(10);
// Bounds the memory of what was recorded; older entries are dropped first.
constexpr size_t kMaxRecorded = 4096;
constexpr size_t kMaxNameBytes = 253;

std::string Text(const json& object, const json::json_pointer& at) {
  return object.contains(at) && object[at].is_string() ? object[at].get<std::string>() : "";
}

}  // namespace

EventObjectReference ReferenceTo(const json& object) {
  EventObjectReference ref;
  ref.api_version = Text(object, "/apiVersion"_json_pointer);
  ref.kind = Text(object, "/kind"_json_pointer);
  ref.namespace_name = Text(object, "/metadata/namespace"_json_pointer);
  ref.name = Text(object, "/metadata/name"_json_pointer);
  ref.uid = Text(object, "/metadata/uid"_json_pointer);
  ref.resource_version = Text(object, "/metadata/resourceVersion"_json_pointer);
  return ref;
}

EventRecorder::EventRecorder(Client& client, EventReportingSource source, const Clock& clock)
    : client_(client), source_(std::move(source)), clock_(clock) {}

absl::Status EventRecorder::Record(const EventObjectReference& about, std::string_view type,
                                   const std::string& reason, const std::string& message) {
  if (type != kEventNormal && type != kEventWarning) {
    return absl::InvalidArgumentError(
        StrCat("event type must be Normal or Warning, not \"", type, "\""));
  }
  const std::string note(Utf8Prefix(message, kMaxEventMessageBytes));
  const std::string key = StrCat(about.kind, "\x1f", about.namespace_name, "\x1f", about.name,
                                 "\x1f", about.uid, "\x1f", type, "\x1f", reason, "\x1f", note);
  const TimePoint now = clock_.Now();
  // Held across the request: one recorder's events go out in order, and a
  // repeat racing its first copy cannot create two Events.
  MutexLock lock(mu_);
  ForgetOld(now);
  if (auto it = recorded_.find(key); it != recorded_.end()) {
    Recorded& seen = it->second;
    const json patch = {{"count", seen.count + 1}, {"lastTimestamp", FormatTimestampSeconds(now)}};
    absl::StatusOr<json> patched =
        client_.Patch(kEvents, seen.namespace_name, seen.name, PatchType::kMerge, patch);
    if (patched.ok()) {
      ++seen.count;
      seen.last = now;
      return absl::OkStatus();
    }
    if (!IsApiNotFound(patched.status())) return patched.status();
    recorded_.erase(it);  // someone deleted it: start a new one
  }
  absl::StatusOr<json> created = Create(about, type, reason, note, now);
  if (!created.ok()) return created.status();
  recorded_[key] = {.namespace_name = (*created)["metadata"].value("namespace", ""),
                    .name = (*created)["metadata"].value("name", ""),
                    .count = 1,
                    .last = now};
  return absl::OkStatus();
}

absl::StatusOr<json> EventRecorder::Create(const EventObjectReference& about, std::string_view type,
                                           const std::string& reason, const std::string& message,
                                           TimePoint now) {
  const std::string ns = about.namespace_name.empty() ? "default" : about.namespace_name;
  // client-go's naming: the object's name and the time in hex nanoseconds.
  char suffix[32];
  snprintf(
      suffix, sizeof(suffix), ".%" PRIx64,
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count()));
  const std::string name =
      StrCat(Utf8Prefix(about.name, kMaxNameBytes - std::string_view(suffix).size()), suffix);
  const std::string time = FormatTimestampSeconds(now);
  Event event;
  event.metadata.name = name;
  event.metadata.namespace_name = ns;
  event.involved_object = about;
  event.reason = reason;
  event.message = message;
  event.type = std::string(type);
  event.source = source_;
  event.first_timestamp = time;
  event.last_timestamp = time;
  event.count = 1;
  event.reporting_component = source_.component;
  event.reporting_instance = source_.host;
  return client_.CreateObject(kEvents, ns, event.ToJson());
}

void EventRecorder::ForgetOld(TimePoint now) {
  for (auto it = recorded_.begin(); it != recorded_.end();) {
    it = now - it->second.last > kAggregationWindow ? recorded_.erase(it) : std::next(it);
  }
  while (recorded_.size() >= kMaxRecorded) {
    auto oldest = recorded_.begin();
    for (auto it = recorded_.begin(); it != recorded_.end(); ++it) {
      if (it->second.last < oldest->second.last) oldest = it;
    }
    recorded_.erase(oldest);
  }
}

}  // namespace canhazgpu::kube
