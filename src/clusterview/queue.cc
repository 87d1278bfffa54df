#include "clusterview/queue.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/time/time.h"
#include "clusterview/explain.h"
#include "clusterview/gang_view.h"
#include "clusterview/node_attempt.h"
#include "clusterview/placement.h"
#include "core/duration.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;

std::string Label(const json& object, const char* key) {
  const json labels = object.value("/metadata/labels"_json_pointer, json::object());
  auto it = labels.find(key);
  return it != labels.end() && it->is_string() ? it->get<std::string>() : "";
}

bool PendingWithClaims(const json& pod) {
  if (pod.value("/spec/resourceClaims"_json_pointer, json::array()).empty()) return false;
  if (!kube::StringAt(pod, "/spec/nodeName"_json_pointer).empty()) return false;
  if (!kube::StringAt(pod, "/metadata/deletionTimestamp"_json_pointer).empty()) return false;
  const std::string phase = kube::StringAt(pod, "/status/phase"_json_pointer);
  return phase.empty() || phase == "Pending";
}

// The requests of the pod's claims (or of their templates, before the
// claim is made).
std::vector<std::string> Asks(const View& view, const json& pod) {
  std::vector<std::string> out;
  const std::string ns = kube::StringAt(pod, "/metadata/namespace"_json_pointer);
  const json entries = pod.value("/spec/resourceClaims"_json_pointer, json::array());
  const auto names = PodClaimNames(pod);
  for (size_t i = 0; i < names.size(); ++i) {
    json requests;
    if (auto c = view.claims.find(StrCat(ns, "/", names[i].second)); c != view.claims.end()) {
      requests = c->second.value("/spec/devices/requests"_json_pointer, json::array());
    } else if (auto t = view.templates.find(
                   StrCat(ns, "/", entries[i].value("resourceClaimTemplateName", "")));
               t != view.templates.end()) {
      requests = t->second.value("/spec/spec/devices/requests"_json_pointer, json::array());
    }
    if (!requests.is_array()) continue;
    for (const json& r : requests)
      out.push_back(StrCat(r.value("name", ""), ": ", DescribeRequest(r)));
  }
  return out;
}

std::optional<TimePoint> Created(const json& pod) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full,
                       kube::StringAt(pod, "/metadata/creationTimestamp"_json_pointer), &t, &err))
    return std::nullopt;
  return std::chrono::time_point_cast<TimePoint::duration>(absl::ToChronoTime(t));
}

}  // namespace

std::vector<QueueEntry> PendingQueue(const View& view, TimePoint now) {
  std::vector<std::tuple<TimePoint, std::string, const json*>> pending;
  for (const auto& [key, pod] : view.pods) {
    if (!PendingWithClaims(pod)) continue;
    pending.emplace_back(Created(pod).value_or(now), key, &pod);
  }
  std::sort(pending.begin(), pending.end());
  std::vector<QueueEntry> out;
  std::set<std::string> gangs_listed;  // "ns/job"
  for (const auto& [created, key, pod] : pending) {
    // A multi-node run waits as one: listed once, where its first rank came.
    const std::string job = GangJobOf(*pod);
    const std::string ns = kube::StringAt(*pod, "/metadata/namespace"_json_pointer);
    if (!job.empty() && !gangs_listed.insert(StrCat(ns, "/", job)).second) continue;
    QueueEntry e;
    e.position = static_cast<int>(out.size()) + 1;
    e.ns = kube::StringAt(*pod, "/metadata/namespace"_json_pointer);
    e.name = kube::StringAt(*pod, "/metadata/name"_json_pointer);
    e.user = Label(*pod, internal::kUserLabel);
    e.run = Label(*pod, kRunLabel);
    e.note = NoteOf(*pod);
    e.asks = Asks(view, *pod);
    e.age = std::max(Duration(0), std::chrono::duration_cast<Duration>(now - created));
    Diagnosis d;
    if (job.empty()) {
      d = ExplainPod(view, *pod, now);
    } else {
      const std::vector<json> ranks = PendingRanks(view, ns, job);
      d = ExplainGang(view, job, ranks, now);
      e.name = job;
      e.ranks = static_cast<int>(ranks.size());
      for (std::string& ask : e.asks) ask = StrCat(e.ranks, " ranks × ", ask);
    }
    e.never = d.never;
    e.why = d.summary;  // starts "can never run: " when it never can
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::vector<std::string>> QueueRows(const std::vector<QueueEntry>& queue) {
  std::vector<std::vector<std::string>> rows = {{"#", "POD", "USER", "NOTE", "ASKS", "AGE", "WHY"}};
  for (const QueueEntry& e : queue) {
    rows.push_back({std::to_string(e.position),
                    StrCat(e.ns, "/", e.name, e.ranks > 0 ? StrCat(" (", e.ranks, " ranks)") : ""),
                    e.user.empty() ? "-" : LabelledUser(e.user), e.note.empty() ? "-" : e.note,
                    Join(e.asks, "; "), FormatDurationShort(e.age), e.why});
  }
  return rows;
}

nlohmann::ordered_json QueueJson(const std::vector<QueueEntry>& queue) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const QueueEntry& e : queue) {
    out.push_back({{"position", e.position},
                   {"namespace", e.ns},
                   {"name", e.name},
                   {"user", e.user},
                   {"run", e.run},
                   {"note", e.note},
                   {"asks", e.asks},
                   {"ageSeconds", std::chrono::duration_cast<std::chrono::seconds>(e.age).count()},
                   {"never", e.never},
                   {"why", e.why},
                   {"ranks", e.ranks}});
  }
  return out;
}

}  // namespace canhazgpu::clusterview
