#include "kubesim/table.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>

#include "core/duration.h"
#include "core/strings.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

json Column(const std::string& name, const std::string& type, const std::string& format,
            const std::string& description, int priority = 0) {
  return {{"name", name},
          {"type", type},
          {"format", format},
          {"description", description},
          {"priority", priority}};
}

std::string Text(const json& object, const json::json_pointer& at) {
  if (!object.contains(at)) return "";
  const json& v = object.at(at);
  return v.is_string() ? v.get<std::string>() : "";
}

// metav1.Time as this server writes it: "2026-11-24T05:50:00Z".
std::optional<TimePoint> ParseTime(const std::string& text) {
  tm t{};
  char zone = 0;
  if (sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &t.tm_year, &t.tm_mon, &t.tm_mday,
             &t.tm_hour, &t.tm_min, &t.tm_sec, &zone) != 7 ||
      zone != 'Z') {
    return std::nullopt;
  }
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  return FromEpochMillis(static_cast<int64_t>(timegm(&t)) * 1000);
}

std::string Age(const json& object, TimePoint now) {
  std::optional<TimePoint> created =
      ParseTime(Text(object, "/metadata/creationTimestamp"_json_pointer));
  if (!created) return "<unknown>";
  return HumanAge(std::chrono::duration_cast<std::chrono::seconds>(now - *created));
}

// kubectl's pod STATUS column: the pod's reason or phase, a container's
// waiting or terminated reason, Terminating while it is being deleted.
std::string PodStatus(const json& pod) {
  const json status = pod.value("status", json::object());
  std::string reason = status.value("reason", status.value("phase", ""));
  for (const json& c : status.value("containerStatuses", json::array())) {
    const json state = c.value("state", json::object());
    if (state.contains("waiting") && !state["waiting"].value("reason", "").empty()) {
      reason = state["waiting"].value("reason", "");
    } else if (state.contains("terminated")) {
      const json& t = state["terminated"];
      if (!t.value("reason", "").empty()) {
        reason = t.value("reason", "");
      } else if (t.value("signal", 0) != 0) {
        reason = StrCat("Signal:", t.value("signal", 0));
      } else {
        reason = StrCat("ExitCode:", t.value("exitCode", 0));
      }
    }
  }
  if (pod.contains("/metadata/deletionTimestamp"_json_pointer)) reason = "Terminating";
  return reason;
}

json PodCells(const json& pod, TimePoint now) {
  const json status = pod.value("status", json::object());
  const json statuses = status.value("containerStatuses", json::array());
  const size_t containers = pod.value("/spec/containers"_json_pointer, json::array()).size();
  int64_t ready = 0;
  int64_t restarts = 0;
  for (const json& c : statuses) {
    if (c.value("ready", false)) ++ready;
    restarts += c.value("restartCount", int64_t{0});
  }
  const std::string ip = status.value("podIP", "");
  const std::string node = Text(pod, "/spec/nodeName"_json_pointer);
  return {Text(pod, "/metadata/name"_json_pointer),
          StrCat(ready, "/", containers),
          PodStatus(pod),
          restarts,
          Age(pod, now),
          ip.empty() ? "<none>" : ip,
          node.empty() ? "<none>" : node};
}

// kubectl's printers for the built-in kinds people list beside pods (the
// server's pkg/printers/internalversion): their columns, and each row's
// cells. Kinds without one show NAME and AGE.
struct Printer {
  json columns;                                       // after Name
  std::function<json(const json&, TimePoint)> cells;  // Name included
};

std::string NoneIfEmpty(const std::string& text) { return text.empty() ? "<none>" : text; }

// "k=v,k2=v2" as labels.FormatLabels writes a map (keys sorted).
std::string FormatLabels(const json& map) {
  std::string out;
  if (!map.is_object()) return "<none>";
  for (const auto& [key, value] : map.items()) {
    if (!value.is_string()) continue;
    out += StrCat(out.empty() ? "" : ",", key, "=", value.get<std::string>());
  }
  return NoneIfEmpty(out);
}

std::string NodeStatus(const json& node) {
  std::string status = "Unknown";
  for (const json& c : node.value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == "Ready")
      status = c.value("status", "") == "True" ? "Ready" : "NotReady";
  }
  if (node.value("/spec/unschedulable"_json_pointer, false)) status += ",SchedulingDisabled";
  return status;
}

std::string NodeRoles(const json& node) {
  std::string roles;
  constexpr std::string_view kRole = "node-role.kubernetes.io/";
  // Held here: a range over a temporary's items() would outlive it.
  const json labels = node.value("/metadata/labels"_json_pointer, json::object());
  for (const auto& [key, value] : labels.items()) {
    if (key.starts_with(kRole) && key.size() > kRole.size()) {
      roles += StrCat(roles.empty() ? "" : ",", key.substr(kRole.size()));
    }
  }
  return NoneIfEmpty(roles);
}

// resourceClaimState: deleted, pending or allocated, and reserved.
std::string ClaimState(const json& claim) {
  std::vector<std::string> states;
  const bool deleted = claim.contains("/metadata/deletionTimestamp"_json_pointer);
  if (deleted) states.push_back("deleted");
  if (!claim.contains("/status/allocation"_json_pointer)) {
    if (!deleted) states.push_back("pending");
  } else {
    states.push_back("allocated");
  }
  if (!claim.value("/status/reservedFor"_json_pointer, json::array()).empty()) {
    states.push_back("reserved");
  }
  return Join(states, ",");
}

int64_t Int(const json& object, const json::json_pointer& at) {
  return object.contains(at) && object.at(at).is_number_integer() ? object.at(at).get<int64_t>()
                                                                  : 0;
}

// The STATUS of `kubectl get jobs`: the last word of the Job's conditions.
std::string JobStatus(const json& job) {
  if (job.contains("/metadata/deletionTimestamp"_json_pointer)) return "Terminating";
  std::string status = "Running";
  for (const char* type :
       {"Suspended", "FailureTarget", "SuccessCriteriaMet", "Failed", "Complete"}) {
    for (const json& c : job.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == type && c.value("status", "") == "True") status = type;
    }
  }
  return status;
}

// "2/3", or "1/1 of 4" for a work queue of parallelism 4.
std::string JobCompletions(const json& job) {
  const int64_t succeeded = Int(job, "/status/succeeded"_json_pointer);
  if (job.contains("/spec/completions"_json_pointer))
    return StrCat(succeeded, "/", Int(job, "/spec/completions"_json_pointer));
  const int64_t parallelism = Int(job, "/spec/parallelism"_json_pointer);
  if (parallelism > 1) return StrCat(succeeded, "/1 of ", parallelism);
  return StrCat(succeeded, "/1");
}

// From start to completion, or to now while it runs.
std::string JobDuration(const json& job, TimePoint now) {
  std::optional<TimePoint> start = ParseTime(Text(job, "/status/startTime"_json_pointer));
  if (!start) return "";
  std::optional<TimePoint> end = ParseTime(Text(job, "/status/completionTime"_json_pointer));
  return HumanAge(std::chrono::duration_cast<std::chrono::seconds>(end.value_or(now) - *start));
}

// Long because: one printer per built-in resource, in a row, as kubectl's
// own printers are; each case is read and changed on its own.
std::optional<Printer> BuiltInPrinter(const ResourceType& type) {
  const std::string age_help =
      "CreationTimestamp is a timestamp representing the server time when this object was "
      "created.";
  auto name = [](const json& o) { return Text(o, "/metadata/name"_json_pointer); };
  if (type.group.empty() && type.resource == "pods") {
    return Printer{
        {Column("Ready", "string", "",
                "The aggregate readiness state of this pod for accepting traffic."),
         Column("Status", "string", "", "The aggregate status of the containers in this pod."),
         Column("Restarts", "string", "",
                "The number of times the containers in this pod have been restarted."),
         Column("Age", "string", "", age_help),
         Column("IP", "string", "", "IP address allocated to the pod.", 1),
         Column("Node", "string", "", "Name of the node the pod is assigned to.", 1)},
        PodCells};
  }
  if (type.group.empty() && type.resource == "nodes") {
    return Printer{{Column("Status", "string", "", "The status of the node"),
                    Column("Roles", "string", "", "The roles of the node"),
                    Column("Age", "string", "", age_help),
                    Column("Version", "string", "", "Kubelet Version reported by the node.")},
                   [=](const json& n, TimePoint now) {
                     return json{name(n), NodeStatus(n), NodeRoles(n), Age(n, now),
                                 Text(n, "/status/nodeInfo/kubeletVersion"_json_pointer)};
                   }};
  }
  if (type.group == "apps" && type.resource == "daemonsets") {
    return Printer{
        {Column("Desired", "integer", "", "The desired number of pods."),
         Column("Current", "integer", "", "The current number of pods."),
         Column("Ready", "integer", "", "The number of pods ready."),
         Column("Up-to-date", "integer", "", "The number of pods updated."),
         Column("Available", "integer", "", "The number of pods available."),
         Column("Node Selector", "string", "",
                "Which nodes the pods are scheduled to: the pod template's node selector."),
         Column("Age", "string", "", age_help)},
        [=](const json& d, TimePoint now) {
          return json{name(d),
                      Int(d, "/status/desiredNumberScheduled"_json_pointer),
                      Int(d, "/status/currentNumberScheduled"_json_pointer),
                      Int(d, "/status/numberReady"_json_pointer),
                      Int(d, "/status/updatedNumberScheduled"_json_pointer),
                      Int(d, "/status/numberAvailable"_json_pointer),
                      FormatLabels(
                          d.value("/spec/template/spec/nodeSelector"_json_pointer, json::object())),
                      Age(d, now)};
        }};
  }
  if (type.group == "apps" && type.resource == "deployments") {
    return Printer{{Column("Ready", "string", "", "Number of the pod with ready state"),
                    Column("Up-to-date", "string", "",
                           "Total number of non-terminated pods targeted by "
                           "this deployment that have the desired template spec."),
                    Column("Available", "string", "",
                           "Total number of available pods (ready for at least "
                           "minReadySeconds) targeted by this deployment."),
                    Column("Age", "string", "", age_help)},
                   [=](const json& d, TimePoint now) {
                     return json{name(d),
                                 StrCat(Int(d, "/status/readyReplicas"_json_pointer), "/",
                                        Int(d, "/spec/replicas"_json_pointer)),
                                 Int(d, "/status/updatedReplicas"_json_pointer),
                                 Int(d, "/status/availableReplicas"_json_pointer), Age(d, now)};
                   }};
  }
  if (type.group == "apps" && type.resource == "replicasets") {
    return Printer{{Column("Desired", "integer", "", "Number of desired pods."),
                    Column("Current", "integer", "", "Number of actual replicas."),
                    Column("Ready", "integer", "", "Number of ready replicas."),
                    Column("Age", "string", "", age_help)},
                   [=](const json& r, TimePoint now) {
                     return json{name(r), Int(r, "/spec/replicas"_json_pointer),
                                 Int(r, "/status/replicas"_json_pointer),
                                 Int(r, "/status/readyReplicas"_json_pointer), Age(r, now)};
                   }};
  }
  if (type.group == "batch" && type.resource == "jobs") {
    return Printer{
        {Column("Status", "string", "", "Status of the job."),
         Column("Completions", "string", "",
                "The completion status of the job: succeeded of desired."),
         Column("Duration", "string", "", "Time required to complete the job."),
         Column("Age", "string", "", age_help)},
        [=](const json& j, TimePoint now) {
          return json{name(j), JobStatus(j), JobCompletions(j), JobDuration(j, now), Age(j, now)};
        }};
  }
  if (type.group == "resource.k8s.io" && type.resource == "resourceclaims") {
    return Printer{{Column("State", "string", "",
                           "A summary of the current state (allocated, pending, reserved, "
                           "etc.)."),
                    Column("Age", "string", "", age_help)},
                   [=](const json& c, TimePoint now) {
                     return json{name(c), ClaimState(c), Age(c, now)};
                   }};
  }
  if (type.group == "resource.k8s.io" && type.resource == "resourceslices") {
    return Printer{{Column("Node", "string", "", "The node providing the resources."),
                    Column("Driver", "string", "", "The driver providing the resources."),
                    Column("Pool", "string", "", "The pool containing the resources."),
                    Column("Age", "string", "", age_help)},
                   [=](const json& r, TimePoint now) {
                     return json{name(r), NoneIfEmpty(Text(r, "/spec/nodeName"_json_pointer)),
                                 Text(r, "/spec/driver"_json_pointer),
                                 Text(r, "/spec/pool/name"_json_pointer), Age(r, now)};
                   }};
  }
  return std::nullopt;
}

// The value at a printer column's jsonPath; only plain paths (.a.b.c), as
// our CRD uses, are followed.
json PrinterCell(const json& object, const json& column) {
  std::string path = column.value("jsonPath", "");
  if (path.empty() || path[0] != '.') return nullptr;
  std::replace(path.begin(), path.end(), '.', '/');
  const json::json_pointer pointer(path);
  if (!object.contains(pointer)) return nullptr;
  return object.at(pointer);
}

}  // namespace

bool WantsTable(const std::string& accept) {
  const std::string first = accept.substr(0, accept.find(','));
  return first.find("as=Table") != std::string::npos;
}

std::string HumanAge(std::chrono::seconds age) {
  const int64_t s = std::max<int64_t>(age.count(), 0);
  const int64_t minutes = s / 60, hours = s / 3600, days = hours / 24, years = days / 365;
  if (s < 120) return StrCat(s, "s");
  if (minutes < 10) return s % 60 == 0 ? StrCat(minutes, "m") : StrCat(minutes, "m", s % 60, "s");
  if (minutes < 180) return StrCat(minutes, "m");
  if (hours < 8)
    return minutes % 60 == 0 ? StrCat(hours, "h") : StrCat(hours, "h", minutes % 60, "m");
  if (hours < 48) return StrCat(hours, "h");
  if (hours < 24 * 8)
    return hours % 24 == 0 ? StrCat(days, "d") : StrCat(days, "d", hours % 24, "h");
  if (days < 365 * 2) return StrCat(days, "d");
  if (days < 365 * 8)
    return days % 365 == 0 ? StrCat(years, "y") : StrCat(years, "y", days % 365, "d");
  return StrCat(years, "y");
}

json ToTable(const ResourceType& type, const json& objects, const json& crd,
             const std::string& include_object, TimePoint now, bool with_columns) {
  const std::optional<Printer> printer = BuiltInPrinter(type);
  json printer_columns = json::array();
  if (crd.is_object()) {
    for (const json& version : crd.value("/spec/versions"_json_pointer, json::array())) {
      if (version.value("name", "") == type.version) {
        printer_columns = version.value("additionalPrinterColumns", json::array());
      }
    }
  }
  const std::string name_help =
      "Name must be unique within a namespace. Is required when creating resources.";
  const std::string age_help =
      "CreationTimestamp is a timestamp representing the server time when this object was "
      "created.";
  json columns = json::array({Column("Name", "string", "name", name_help)});
  if (printer) {
    for (const json& c : printer->columns) columns.push_back(c);
  } else {
    // A CRD's own columns replace the default Age (the real server's rule).
    for (const json& c : printer_columns) {
      columns.push_back(Column(c.value("name", ""), c.value("type", "string"),
                               c.value("format", ""), c.value("description", ""),
                               c.value("priority", 0)));
    }
    if (printer_columns.empty()) columns.push_back(Column("Age", "date", "", age_help));
  }

  const bool list = objects.contains("items");
  const json items = list ? objects["items"] : json::array({objects});
  json rows = json::array();
  for (const json& object : items) {
    json cells;
    if (printer) {
      cells = printer->cells(object, now);
    } else {
      cells = json::array({Text(object, "/metadata/name"_json_pointer)});
      for (const json& c : printer_columns) {
        json cell = PrinterCell(object, c);
        // Dates print as ages, as kubectl shows creationTimestamp.
        if (c.value("type", "") == "date" && cell.is_string()) {
          std::optional<TimePoint> at = ParseTime(cell.get<std::string>());
          if (at) cell = HumanAge(std::chrono::duration_cast<std::chrono::seconds>(now - *at));
        }
        cells.push_back(std::move(cell));
      }
      if (printer_columns.empty()) cells.push_back(Age(object, now));
    }
    json row_object;
    if (include_object == "Object") {
      row_object = object;
    } else if (include_object != "None") {
      row_object = {{"kind", "PartialObjectMetadata"},
                    {"apiVersion", "meta.k8s.io/v1"},
                    {"metadata", object.value("metadata", json::object())}};
    }
    json row = {{"cells", std::move(cells)}};
    if (!row_object.is_null()) row["object"] = std::move(row_object);
    rows.push_back(std::move(row));
  }
  json table = {{"kind", "Table"},
                {"apiVersion", "meta.k8s.io/v1"},
                {"metadata", json::object()},
                {"columnDefinitions", with_columns ? std::move(columns) : json::array()},
                {"rows", std::move(rows)}};
  if (list) {
    for (const char* key : {"resourceVersion", "continue"}) {
      if (objects.contains("metadata") && objects["metadata"].contains(key)) {
        table["metadata"][key] = objects["metadata"][key];
      }
    }
  } else if (objects.contains("/metadata/resourceVersion"_json_pointer)) {
    table["metadata"]["resourceVersion"] = objects["metadata"]["resourceVersion"];
  }
  return table;
}

}  // namespace canhazgpu::kubesim
