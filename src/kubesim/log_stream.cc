// pods/log: a container's output with kubectl's options (container,
// tailLines, sinceSeconds, timestamps, follow), and the real server's
// answers when the pod has several containers, names another one, or has
// not started it yet.
#include <algorithm>

#include "core/strings.h"
#include "kubesim/api_server.h"
#include "kubesim/http_common.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

std::vector<std::string> ContainerNames(const json& pod) {
  std::vector<std::string> names;
  for (const char* list : {"containers", "initContainers", "ephemeralContainers"}) {
    const json* containers = pod.contains("spec") ? &pod["spec"] : nullptr;
    if (containers == nullptr || !containers->contains(list) || !(*containers)[list].is_array()) {
      continue;
    }
    for (const json& c : (*containers)[list]) {
      if (c.is_object() && c.contains("name") && c["name"].is_string()) names.push_back(c["name"]);
    }
  }
  return names;
}

// A non-negative integer query parameter; nullopt when malformed.
std::optional<int64_t> Count(const httplib::Request& req, const char* key, int64_t absent) {
  const std::string text = Param(req, key);
  if (text.empty()) return absent;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || value < 0) return std::nullopt;
  return value;
}

}  // namespace

void ApiServer::HandleLog(const Route& route, const httplib::Request& req, httplib::Response& res) {
  const std::optional<ResourceType> pods = store_.FindType("", "v1", "pods");
  Outcome pod = store_.Get(*pods, route.ns, route.name);
  if (!pod.ok()) return Fail(res, *pod.error);
  // Only spec.containers may be chosen by default; the real server lists
  // them in its message.
  std::vector<std::string> main_containers;
  for (const json& c : pod.object["spec"].value("containers", json::array())) {
    if (c.is_object() && c.contains("name") && c["name"].is_string()) {
      main_containers.push_back(c["name"]);
    }
  }
  std::string container = Param(req, "container");
  if (container.empty()) {
    if (main_containers.size() != 1) {
      std::string choices;
      for (const std::string& c : main_containers) choices += StrCat(choices.empty() ? "" : " ", c);
      return Fail(res,
                  kube::BadRequestStatus(StrCat("a container name must be specified for pod ",
                                                route.name, ", choose one of: [", choices, "]")));
    }
    container = main_containers[0];
  }
  const std::vector<std::string> all = ContainerNames(pod.object);
  if (std::find(all.begin(), all.end(), container) == all.end()) {
    return Fail(res, kube::BadRequestStatus(
                         StrCat("container ", container, " is not valid for pod ", route.name)));
  }
  if (!logs_.Started(route.ns, route.name, container)) {
    return Fail(res,
                kube::BadRequestStatus(StrCat("container \"", container, "\" in pod \"", route.name,
                                              "\" is waiting to start: ContainerCreating")));
  }
  LogQuery query;
  const std::optional<int64_t> tail = Count(req, "tailLines", -1);
  const std::optional<int64_t> since = Count(req, "sinceSeconds", 0);
  if (!tail || !since) {
    return Fail(res, kube::BadRequestStatus("tailLines and sinceSeconds must be non-negative "
                                            "integers"));
  }
  query.tail_lines = *tail;
  query.since_seconds = *since;
  query.timestamps = BoolParam(req, "timestamps");

  if (!BoolParam(req, "follow")) {
    LogCursor cursor;
    std::optional<std::string> text =
        logs_.Read(route.ns, route.name, container, query, cursor, std::chrono::milliseconds(0));
    res.status = 200;
    res.set_content(text.value_or(""), "text/plain");
    return;
  }
  KeepUncompressed(req);
  res.status = 200;
  auto cursor = std::make_shared<LogCursor>();
  res.set_chunked_content_provider(
      "text/plain", [this, route, container, query, cursor](size_t, httplib::DataSink& sink) {
        if (stopping_) {
          sink.done();
          return true;
        }
        std::optional<std::string> text = logs_.Read(route.ns, route.name, container, query,
                                                     *cursor, std::chrono::milliseconds(1000));
        if (!text) {  // the container ended, or the pod is gone
          sink.done();
          return true;
        }
        if (!text->empty() && !sink.write(text->data(), text->size())) return false;
        return sink.is_writable();
      });
}

}  // namespace canhazgpu::kubesim
