#include "simcluster/job_controller.h"

#include <algorithm>

#include "absl/strings/str_split.h"
#include "core/duration.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::simcluster {

using clusterview::KeyOf;
using clusterview::View;
using nlohmann::json;

namespace {

// A Job condition's second time field.
constexpr char kProbe[] = "lastProbeTime";

bool ConditionTrue(const json& object, const std::string& type) {
  for (const json& c : object.value("/status/conditions"_json_pointer, json::array())) {
    if (kube::StringField(c, "type") == type && kube::StringField(c, "status") == "True")
      return true;
  }
  return false;
}

bool Finished(const json& job) {
  return ConditionTrue(job, "Complete") || ConditionTrue(job, "Failed");
}

std::optional<int64_t> PodIndex(const json& pod) {
  int64_t index = 0;
  const json annotations = pod.value("/metadata/annotations"_json_pointer, json::object());
  if (!annotations.is_object() ||
      !ParseInt(annotations.value(kJobCompletionIndex, std::string("-")), &index) || index < 0) {
    return std::nullopt;
  }
  return index;
}

std::string Phase(const json& pod) { return kube::StringAt(pod, "/status/phase"_json_pointer); }

// The container restarts of a pod: what restartPolicy OnFailure spends of
// the back-off limit without failing the pod.
int64_t Restarts(const json& pod) {
  int64_t restarts = 0;
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    for (const json& c : pod.value("status", json::object()).value(list, json::array()))
      restarts += IntAt(c, "/restartCount"_json_pointer, 0);
  }
  return restarts;
}

// JOB_COMPLETION_INDEX from the pod's own annotation, in each container
// that does not set it itself.
void AddIndexEnv(json& containers) {
  if (!containers.is_array()) return;
  for (json& c : containers) {
    json& env = c["env"];
    if (!env.is_array()) env = json::array();
    bool set = false;
    for (const json& e : env) set = set || kube::StringField(e, "name") == "JOB_COMPLETION_INDEX";
    if (set) continue;
    env.push_back(
        {{"name", "JOB_COMPLETION_INDEX"},
         {"valueFrom",
          {{"fieldRef",
            {{"apiVersion", "v1"},
             {"fieldPath", StrCat("metadata.annotations['", kJobCompletionIndex, "']")}}}}}});
  }
}

// The fields of a Job's spec that decide its pods.
struct JobSpecFields {
  bool indexed;
  bool has_completions;
  bool suspended;
  int64_t completions;
  int64_t parallelism;
};

JobSpecFields ReadJobSpec(const json& job) {
  const json spec = job.value("spec", json::object());
  return {.indexed = spec.value("completionMode", json("NonIndexed")) == "Indexed",
          .has_completions = spec.value("completions", json()).is_number_integer(),
          .suspended = spec.value("suspend", json(false)) == true,
          .completions = IntAt(spec, "/completions"_json_pointer, 1),
          .parallelism = IntAt(spec, "/parallelism"_json_pointer, 1)};
}

// Why the Job fails now ({reason, message}), or two empty strings.
std::pair<std::string, std::string> JobFailure(const json& job, const json& status,
                                               int64_t failures, TimePoint now) {
  const json spec = job.value("spec", json::object());
  const std::optional<TimePoint> started = kube::TimeAt(status, "/startTime"_json_pointer);
  const json deadline = spec.value("activeDeadlineSeconds", json());
  if (failures > IntAt(spec, "/backoffLimit"_json_pointer, 6))
    return {"BackoffLimitExceeded", "Job has reached the specified backoff limit"};
  if (deadline.is_number_integer() && started && !ReadJobSpec(job).suspended &&
      *started + std::chrono::seconds(deadline.get<int64_t>()) <= now)
    return {"DeadlineExceeded", "Job was active longer than specified deadline"};
  return {};
}

}  // namespace

std::set<int64_t> ParseIndexSet(const std::string& text) {
  std::set<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    const size_t dash = part.find('-');
    int64_t first = 0, last = 0;
    if (dash == absl::string_view::npos) {
      if (ParseInt(std::string(part), &first) && first >= 0) out.insert(first);
      continue;
    }
    if (!ParseInt(std::string(part.substr(0, dash)), &first) ||
        !ParseInt(std::string(part.substr(dash + 1)), &last) || first < 0 || last < first ||
        last - first > 1'000'000) {
      continue;
    }
    for (int64_t i = first; i <= last; ++i) out.insert(i);
  }
  return out;
}

std::string IndexSetText(const std::set<int64_t>& indexes) {
  std::string out;
  for (auto it = indexes.begin(); it != indexes.end();) {
    const int64_t first = *it;
    int64_t last = first;
    while (++it != indexes.end() && *it == last + 1) ++last;
    out += StrCat(out.empty() ? "" : ",", first);
    if (last != first) out += StrCat("-", last);
  }
  return out;
}

void JobController::Sync(View& view, const KindInPass& jobs) {
  std::vector<json> all;
  for (const auto& [key, job] : *jobs.objects) all.push_back(job);
  for (const json& job : all) SyncOne(view, jobs, job);
}

void JobController::CreatePod(View& view, const json& job, std::optional<int64_t> index) {
  const std::string name = kube::StringAt(job, "/metadata/name"_json_pointer);
  const json pod_template = job.value("/spec/template"_json_pointer, json::object());
  // The labels the API server's Job defaulting puts on the template, which
  // clients select a Job's pods by.
  const std::string uid = kube::StringAt(job, "/metadata/uid"_json_pointer);
  auto label = [&](json& pod) {
    json& labels = pod["metadata"]["labels"];
    labels["batch.kubernetes.io/job-name"] = name;
    labels["job-name"] = name;
    labels["batch.kubernetes.io/controller-uid"] = uid;
    labels["controller-uid"] = uid;
  };
  if (!index) {
    writer_.CreatePod(view, job, "batch/v1", "Job", pod_template, name + "-", label);
    return;
  }
  const std::string text = std::to_string(*index);
  writer_.CreatePod(view, job, "batch/v1", "Job", pod_template, StrCat(name, "-", text, "-"),
                    [&](json& pod) {
                      label(pod);
                      pod["metadata"]["annotations"][kJobCompletionIndex] = text;
                      pod["metadata"]["labels"][kJobCompletionIndex] = text;
                      json& spec = pod["spec"];
                      if (kube::StringField(spec, "hostname").empty())
                        spec["hostname"] = StrCat(name, "-", text);
                      AddIndexEnv(spec["containers"]);
                      if (spec.contains("initContainers")) AddIndexEnv(spec["initContainers"]);
                    });
}

void JobController::DeleteIfExpired(const json& job) {
  const json ttl = job.value("/spec/ttlSecondsAfterFinished"_json_pointer, json());
  if (!ttl.is_number_integer()) return;
  std::optional<TimePoint> done = kube::TimeAt(job, "/status/completionTime"_json_pointer);
  if (!done) {
    for (const json& c : job.value("/status/conditions"_json_pointer, json::array())) {
      if (kube::StringField(c, "type") == "Failed")
        done = kube::TimeAt(c, "/lastTransitionTime"_json_pointer);
    }
  }
  if (!done || *done + std::chrono::seconds(ttl.get<int64_t>()) > writer_.clock().Now()) return;
  absl::Status status =
      client_.Delete(kJobs, kube::StringAt(job, "/metadata/namespace"_json_pointer),
                     kube::StringAt(job, "/metadata/name"_json_pointer),
                     {.propagation = "Background",
                      .precondition_uid = kube::StringAt(job, "/metadata/uid"_json_pointer)});
  if (!status.ok() && !kube::IsApiNotFound(status) && !kube::IsApiConflict(status))
    writer_.Log(StrCat("job ", KeyOf(job), ": ttlSecondsAfterFinished: ", status.message()));
}

void JobController::Scale(View& view, const json& job, int64_t succeeded,
                          const std::set<int64_t>& completed, std::vector<json> active) {
  const auto [indexed, has_completions, suspended, completions, parallelism] = ReadJobSpec(job);
  if (indexed) {
    std::set<int64_t> running;
    for (const json& pod : active)
      if (auto i = PodIndex(pod)) running.insert(*i);
    int64_t room = parallelism - static_cast<int64_t>(active.size());
    for (int64_t i = 0; i < completions && room > 0; ++i) {
      if (completed.contains(i) || running.contains(i)) continue;
      CreatePod(view, job, i);
      --room;
    }
  } else {
    const int64_t want = has_completions ? std::min(parallelism, completions - succeeded)
                         : succeeded > 0 ? 0
                                         : parallelism;
    for (int64_t n = static_cast<int64_t>(active.size()); n < want; ++n)
      CreatePod(view, job, std::nullopt);
    // Parallelism went down: the youngest go.
    std::sort(active.begin(), active.end(), [](const json& a, const json& b) {
      return kube::StringAt(a, "/metadata/creationTimestamp"_json_pointer) >
             kube::StringAt(b, "/metadata/creationTimestamp"_json_pointer);
    });
    const size_t keep = static_cast<size_t>(std::max<int64_t>(want, 0));
    for (size_t i = 0; i + keep < active.size(); ++i) writer_.DeletePod(active[i]);
  }
}

void JobController::SyncOne(View& view, const KindInPass& jobs, const json& job) {
  if (!kube::StringAt(job, "/metadata/deletionTimestamp"_json_pointer).empty()) return;
  if (Finished(job)) {
    DeleteIfExpired(job);
    return;
  }
  const TimePoint now = writer_.clock().Now();
  const std::string now_text = FormatTimestampSeconds(now);
  const auto [indexed, has_completions, suspended, completions, parallelism] = ReadJobSpec(job);

  std::vector<json> active;
  int64_t succeeded_pods = 0, failed_pods = 0, restarts = 0, terminating = 0;
  json status = job.value("status", json::object());
  std::set<int64_t> completed = ParseIndexSet(status.value("completedIndexes", std::string()));
  for (const json& pod : Controlled(view.pods, job)) {
    if (Phase(pod) == "Succeeded") {
      ++succeeded_pods;
      if (auto i = PodIndex(pod); i && *i < completions) completed.insert(*i);
    } else if (Phase(pod) == "Failed") {
      ++failed_pods;
    } else if (PodActive(pod) && !writer_.Deleting(pod)) {
      active.push_back(pod);
      restarts += Restarts(pod);
    } else {
      ++terminating;
    }
  }
  const int64_t succeeded =
      indexed ? static_cast<int64_t>(completed.size())
              : std::max(IntAt(status, "/succeeded"_json_pointer, 0), succeeded_pods);
  const int64_t failed = std::max(IntAt(status, "/failed"_json_pointer, 0), failed_pods);
  if (!status.contains("startTime") && !suspended) status["startTime"] = now_text;

  const auto [fail_reason, fail_message] = JobFailure(job, status, failed + restarts, now);
  const bool complete = indexed           ? succeeded >= completions
                        : has_completions ? succeeded >= completions
                                          : succeeded > 0 && active.empty();
  json& conditions = status["conditions"];
  if (!fail_reason.empty() || complete || suspended) {
    for (const json& pod : active) writer_.DeletePod(pod);
    terminating += static_cast<int64_t>(active.size());
    active.clear();
  }
  if (!fail_reason.empty()) {
    writer_.SetCondition(conditions, "FailureTarget", true, fail_reason, fail_message, kProbe);
    writer_.SetCondition(conditions, "Failed", true, fail_reason, fail_message, kProbe);
  } else if (complete) {
    writer_.SetCondition(conditions, "SuccessCriteriaMet", true, "CompletionsReached",
                         "Reached expected number of succeeded pods", kProbe);
    writer_.SetCondition(conditions, "Complete", true, "CompletionsReached",
                         "Reached expected number of succeeded pods", kProbe);
    status["completionTime"] = now_text;
  } else if (suspended) {
    writer_.SetCondition(conditions, "Suspended", true, "JobSuspended", "Job suspended", kProbe);
  } else {
    if (ConditionTrue(job, "Suspended"))
      writer_.SetCondition(conditions, "Suspended", false, "JobResumed", "Job resumed", kProbe);
    Scale(view, job, succeeded, completed, active);
    active.clear();
    for (const json& pod : Controlled(view.pods, job))
      if (PodActive(pod) && !writer_.Deleting(pod)) active.push_back(pod);
  }
  if (conditions.empty()) status.erase("conditions");
  int64_t ready = 0;
  for (const json& pod : active) ready += PodReady(pod) ? 1 : 0;
  status["active"] = active.size();
  status["ready"] = ready;
  status["terminating"] = terminating;
  status["succeeded"] = succeeded;
  status["failed"] = failed;
  status["uncountedTerminatedPods"] = json::object();
  if (indexed) status["completedIndexes"] = IndexSetText(completed);
  writer_.WriteStatus(jobs, job, status);
}

}  // namespace canhazgpu::simcluster
