#include "kubesim/table.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
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
  const bool pods = type.group.empty() && type.resource == "pods";
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
  if (pods) {
    columns.push_back(Column("Ready", "string", "",
                             "The aggregate readiness state of this pod for accepting traffic."));
    columns.push_back(
        Column("Status", "string", "", "The aggregate status of the containers in this pod."));
    columns.push_back(
        Column("Restarts", "string", "",
               "The number of times the containers in this pod have been restarted."));
    columns.push_back(Column("Age", "string", "", age_help));
    columns.push_back(Column("IP", "string", "", "IP address allocated to the pod.", 1));
    columns.push_back(Column("Node", "string", "", "Name of the node the pod is assigned to.", 1));
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
    if (pods) {
      cells = PodCells(object, now);
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
