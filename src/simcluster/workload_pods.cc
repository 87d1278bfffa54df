#include "simcluster/workload_pods.h"

#include <algorithm>
#include <cmath>

#include "core/duration.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::simcluster {

using clusterview::KeyOf;
using clusterview::View;
using nlohmann::json;

int64_t IntAt(const json& object, const json::json_pointer& pointer, int64_t fallback) {
  if (!object.is_object() || !object.contains(pointer)) return fallback;
  const json& value = object.at(pointer);
  return value.is_number_integer() ? value.get<int64_t>() : fallback;
}

bool PodActive(const json& pod) {
  const std::string phase = kube::StringAt(pod, "/status/phase"_json_pointer);
  return phase != "Succeeded" && phase != "Failed" &&
         kube::StringAt(pod, "/metadata/deletionTimestamp"_json_pointer).empty();
}

namespace {

const json* ReadyCondition(const json& pod) {
  const json* conditions = pod.contains("status") && pod["status"].is_object() &&
                                   pod["status"].contains("conditions") &&
                                   pod["status"]["conditions"].is_array()
                               ? &pod["status"]["conditions"]
                               : nullptr;
  if (conditions == nullptr) return nullptr;
  for (const json& c : *conditions) {
    if (kube::StringField(c, "type") == "Ready") return &c;
  }
  return nullptr;
}

}  // namespace

bool PodReady(const json& pod) {
  const json* ready = ReadyCondition(pod);
  return ready != nullptr && kube::StringField(*ready, "status") == "True";
}

bool PodAvailable(const json& pod, int64_t min_ready_seconds, TimePoint now) {
  if (!PodReady(pod)) return false;
  if (min_ready_seconds <= 0) return true;
  std::optional<TimePoint> since =
      kube::TimeAt(*ReadyCondition(pod), "/lastTransitionTime"_json_pointer);
  return since && *since + std::chrono::seconds(min_ready_seconds) <= now;
}

std::vector<json> Controlled(const std::map<std::string, json>& objects, const json& owner) {
  const std::string uid = kube::StringAt(owner, "/metadata/uid"_json_pointer);
  const std::string ns = kube::StringAt(owner, "/metadata/namespace"_json_pointer);
  std::vector<json> out;
  for (const auto& [key, object] : objects) {
    if (kube::StringAt(object, "/metadata/namespace"_json_pointer) != ns) continue;
    for (const json& ref : object.value("/metadata/ownerReferences"_json_pointer, json::array())) {
      if (ref.value("controller", false) && kube::StringField(ref, "uid") == uid) {
        out.push_back(object);
        break;
      }
    }
  }
  return out;
}

std::string TemplateHash(const json& pod_template) {
  // FNV-1a over the template's canonical JSON (keys sorted), as the
  // controllers hash the template (their exact bytes differ: Go's encoding).
  uint32_t hash = 2166136261u;
  for (unsigned char c : pod_template.dump()) {
    hash ^= c;
    hash *= 16777619u;
  }
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (int i = 0; i < 10; ++i) {
    out += kAlphabet[hash % (sizeof(kAlphabet) - 1)];
    hash /= sizeof(kAlphabet) - 1;
    if (hash == 0) break;
  }
  return out;
}

int64_t ScaledValue(const json& value, int64_t total, bool round_up) {
  if (value.is_number_integer()) return std::max<int64_t>(0, value.get<int64_t>());
  if (!value.is_string()) return 0;
  std::string text = value.get<std::string>();
  if (text.empty() || text.back() != '%') return 0;
  text.pop_back();
  int64_t percent = 0;
  if (!ParseInt(text, &percent) || percent < 0) return 0;
  const double scaled = static_cast<double>(percent) * static_cast<double>(total) / 100.0;
  return static_cast<int64_t>(round_up ? std::ceil(scaled) : std::floor(scaled));
}

void WorkloadWriter::StartPass(const View& view) {
  std::set<std::string> present;
  for (const auto& [key, pod] : view.pods)
    present.insert(kube::StringAt(pod, "/metadata/uid"_json_pointer));
  std::erase_if(deleting_, [&](const std::string& uid) { return !present.contains(uid); });
}

bool WorkloadWriter::Deleting(const json& pod) const {
  return deleting_.contains(kube::StringAt(pod, "/metadata/uid"_json_pointer));
}

bool WorkloadWriter::CreatePod(View& view, const json& owner, const std::string& owner_api_version,
                               const std::string& owner_kind, const json& pod_template,
                               const std::string& generate_name,
                               const std::function<void(json&)>& mutate) {
  const std::string ns = kube::StringAt(owner, "/metadata/namespace"_json_pointer);
  json meta = pod_template.value("metadata", json::object());
  if (!meta.is_object()) meta = json::object();
  meta.erase("name");
  meta["generateName"] = generate_name;
  meta["namespace"] = ns;
  meta["ownerReferences"] = {{{"apiVersion", owner_api_version},
                              {"kind", owner_kind},
                              {"name", kube::StringAt(owner, "/metadata/name"_json_pointer)},
                              {"uid", kube::StringAt(owner, "/metadata/uid"_json_pointer)},
                              {"controller", true},
                              {"blockOwnerDeletion", true}}};
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", meta},
              {"spec", pod_template.value("spec", json::object())}};
  if (mutate) mutate(pod);
  absl::StatusOr<json> created = client_.CreateObject(kube::kPods, ns, pod);
  if (!created.ok()) {
    log_(StrCat(owner_kind, " ", KeyOf(owner), ": creating a pod: ", created.status().message()));
    return false;
  }
  Wrote(pods_, view.pods, *created);
  return true;
}

void WorkloadWriter::DeletePod(const json& pod) {
  const std::string uid = kube::StringAt(pod, "/metadata/uid"_json_pointer);
  absl::Status status =
      client_.Delete(kube::kPods, kube::StringAt(pod, "/metadata/namespace"_json_pointer),
                     kube::StringAt(pod, "/metadata/name"_json_pointer), {.precondition_uid = uid});
  if (status.ok() || kube::IsApiNotFound(status)) {
    deleting_.insert(uid);
  } else if (!kube::IsApiConflict(status)) {
    log_(StrCat("deleting pod ", KeyOf(pod), ": ", status.message()));
  }
}

void WorkloadWriter::WriteStatus(const KindInPass& kind, const json& object, const json& status) {
  if (object.value("status", json::object()) == status) return;
  json updated = object;
  updated["status"] = status;
  absl::StatusOr<json> written = client_.UpdateStatus(
      *kind.ref, kube::StringAt(object, "/metadata/namespace"_json_pointer), updated);
  if (!written.ok()) {
    // A conflict: the object changed, and that change wakes the next pass.
    if (!kube::IsApiConflict(written.status()) && !kube::IsApiNotFound(written.status()))
      log_(StrCat(kind.ref->Qualified(), " ", KeyOf(object), ": ", written.status().message()));
    return;
  }
  Wrote(*kind.overlay, *kind.objects, *written);
}

bool WorkloadWriter::Create(const KindInPass& kind, const json& object) {
  absl::StatusOr<json> written = client_.CreateObject(
      *kind.ref, kube::StringAt(object, "/metadata/namespace"_json_pointer), object);
  if (!written.ok()) {
    log_(StrCat(kind.ref->Qualified(), " ", KeyOf(object), ": ", written.status().message()));
    return false;
  }
  Wrote(*kind.overlay, *kind.objects, *written);
  return true;
}

bool WorkloadWriter::Update(const KindInPass& kind, const json& object) {
  absl::StatusOr<json> written =
      client_.Update(*kind.ref, kube::StringAt(object, "/metadata/namespace"_json_pointer), object);
  if (!written.ok()) {
    if (!kube::IsApiConflict(written.status()) && !kube::IsApiNotFound(written.status()))
      log_(StrCat(kind.ref->Qualified(), " ", KeyOf(object), ": ", written.status().message()));
    return false;
  }
  Wrote(*kind.overlay, *kind.objects, *written);
  return true;
}

void WorkloadWriter::SetCondition(json& conditions, const std::string& type, bool status,
                                  const std::string& reason, const std::string& message,
                                  const char* update_time) const {
  if (!conditions.is_array()) conditions = json::array();
  const std::string value = status ? "True" : "False";
  const std::string now = FormatTimestampSeconds(clock_.Now());
  for (json& c : conditions) {
    if (kube::StringField(c, "type") != type) continue;
    if (kube::StringField(c, "status") == value && kube::StringField(c, "reason") == reason &&
        kube::StringField(c, "message") == message) {
      return;
    }
    if (kube::StringField(c, "status") != value) c["lastTransitionTime"] = now;
    c["status"] = value;
    c["reason"] = reason;
    c["message"] = message;
    c[update_time] = now;
    return;
  }
  conditions.push_back({{"type", type},
                        {"status", value},
                        {"reason", reason},
                        {"message", message},
                        {update_time, now},
                        {"lastTransitionTime", now}});
}

}  // namespace canhazgpu::simcluster
