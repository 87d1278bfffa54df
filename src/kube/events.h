// Events as kubectl describe shows them: core/v1 Events about an object, by
// a named component, aggregated like client-go's recorder — the same event
// repeated within ten minutes bumps `count` and `lastTimestamp` on one
// Event instead of filling the namespace with copies. Thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "kube/client.h"
#include "kube/objects_core.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kube {

// What an Event is about, from an object read from the API (apiVersion,
// kind, metadata).
EventObjectReference ReferenceTo(const nlohmann::json& object);

inline constexpr char kEventNormal[] = "Normal";
inline constexpr char kEventWarning[] = "Warning";
// Longer messages are cut (at a UTF-8 boundary), as the events API limits
// a note to 1 KiB.
inline constexpr size_t kMaxEventMessageBytes = 1024;

class EventRecorder {
 public:
  // `source`: who reports — source.component and reportingComponent
  // ("k8shazgpu-node"), source.host and reportingInstance (the node).
  // `client` and `clock` must outlive the recorder.
  EventRecorder(Client& client, EventReportingSource source, const Clock& clock);

  // Creates (or, for a repeat, updates) the Event in the object's namespace
  // ("default" for cluster-scoped objects). `type` is kEventNormal or
  // kEventWarning; `reason` a CamelCase word.
  absl::Status Record(const EventObjectReference& about, std::string_view type,
                      const std::string& reason, const std::string& message);

 private:
  struct Recorded {
    std::string namespace_name;
    std::string name;
    int64_t count = 0;
    TimePoint last;
  };

  absl::StatusOr<nlohmann::json> Create(const EventObjectReference& about, std::string_view type,
                                        const std::string& reason, const std::string& message,
                                        TimePoint now);
  void ForgetOld(TimePoint now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Client& client_;
  const EventReportingSource source_;
  const Clock& clock_;
  Mutex mu_;
  std::map<std::string, Recorded> recorded_
      ABSL_GUARDED_BY(mu_);  // by what the event says and is about
};

}  // namespace canhazgpu::kube
