#include "simkubelet/pod_status.h"

#include <utility>

#include "core/strings.h"

namespace canhazgpu::simkubelet {

using nlohmann::json;

void ContainerRecord::Terminate(int code, int sig, const std::string& now, const std::string& why) {
  state = State::kTerminated;
  exit_code = code;
  signal = sig;
  reason = why.empty() ? (code == 0 ? "Completed" : "Error") : why;
  finished_at = now;
  if (started_at.empty()) started_at = now;
}

json ContainerStatusJson(const ContainerRecord& c, bool init_container) {
  json status = {
      {"name", c.name}, {"image", c.image}, {"imageID", ""}, {"restartCount", c.restart_count}};
  json state;
  switch (c.state) {
    case ContainerRecord::State::kWaiting:
      state["waiting"] = {{"reason", c.reason}};
      if (!c.message.empty()) state["waiting"]["message"] = c.message;
      break;
    case ContainerRecord::State::kRunning:
      state["running"] = {{"startedAt", c.started_at}};
      break;
    case ContainerRecord::State::kTerminated: {
      json t = {{"exitCode", c.exit_code},
                {"reason", c.reason},
                {"startedAt", c.started_at},
                {"finishedAt", c.finished_at}};
      if (c.signal != 0) t["signal"] = c.signal;
      if (!c.message.empty()) t["message"] = c.message;
      if (!c.container_id.empty()) t["containerID"] = c.container_id;
      state["terminated"] = std::move(t);
      break;
    }
  }
  status["state"] = std::move(state);
  status["lastState"] =
      c.last_terminated.is_null() ? json::object() : json{{"terminated", c.last_terminated}};
  if (!c.container_id.empty()) status["containerID"] = c.container_id;
  if (c.allocated_resources_status.is_array() && !c.allocated_resources_status.empty()) {
    status["allocatedResourcesStatus"] = c.allocated_resources_status;
  }
  // No probes: a running container is ready and started; an init container
  // is ready once it completed.
  const bool running = c.state == ContainerRecord::State::kRunning;
  status["ready"] = init_container ? c.Succeeded() : running;
  status["started"] = running;
  return status;
}

namespace {

std::string Names(const std::vector<std::string>& names) {
  return StrCat("[", Join(names, " "), "]");
}

}  // namespace

json PodStatusJson(PodRecord& pod, const json& scheduled, const std::string& now) {
  json conditions = json::array();
  auto add = [&](const std::string& type, bool ok, const std::string& reason,
                 const std::string& message) {
    const std::string value = ok ? "True" : "False";
    auto& [last_value, since] = pod.transitions[type];
    if (last_value != value) {
      last_value = value;
      since = now;
    }
    json c = {{"type", type}, {"status", value}, {"lastTransitionTime", since}};
    if (!reason.empty()) c["reason"] = reason;
    if (!message.empty()) c["message"] = message;
    conditions.push_back(std::move(c));
  };
  const bool terminal = pod.phase == "Succeeded" || pod.phase == "Failed";
  add("PodReadyToStartContainers", pod.sandbox_ready && !terminal, "", "");

  std::vector<std::string> uninitialized;
  for (const ContainerRecord& c : pod.init_containers) {
    if (!c.Succeeded()) uninitialized.push_back(c.name);
  }
  if (uninitialized.empty()) {
    add("Initialized", true, terminal && !pod.init_containers.empty() ? "PodCompleted" : "", "");
  } else {
    add("Initialized", false, "ContainersNotInitialized",
        StrCat("containers with incomplete status: ", Names(uninitialized)));
  }
  std::vector<std::string> unready;
  for (const ContainerRecord& c : pod.containers) {
    if (c.state != ContainerRecord::State::kRunning) unready.push_back(c.name);
  }
  const std::string why = pod.phase == "Succeeded" ? "PodCompleted"
                          : pod.phase == "Failed"  ? "PodFailed"
                                                   : "ContainersNotReady";
  const std::string what =
      terminal ? "" : StrCat("containers with unready status: ", Names(unready));
  add("ContainersReady", unready.empty(), unready.empty() ? "" : why, unready.empty() ? "" : what);
  add("Ready", unready.empty(), unready.empty() ? "" : why, unready.empty() ? "" : what);
  if (scheduled.is_object()) {
    conditions.push_back(scheduled);
  } else {
    add("PodScheduled", true, "", "");
  }

  json status = {{"phase", pod.phase}, {"conditions", std::move(conditions)}};
  if (!pod.reason.empty()) status["reason"] = pod.reason;
  if (!pod.message.empty()) status["message"] = pod.message;
  if (!pod.start_time.empty()) status["startTime"] = pod.start_time;
  if (!pod.host_ip.empty()) {
    status["hostIP"] = pod.host_ip;
    status["hostIPs"] = {{{"ip", pod.host_ip}}};
  }
  if (!pod.pod_ip.empty()) {
    status["podIP"] = pod.pod_ip;
    status["podIPs"] = {{{"ip", pod.pod_ip}}};
  }
  json init = json::array();
  for (const ContainerRecord& c : pod.init_containers) init.push_back(ContainerStatusJson(c, true));
  json containers = json::array();
  for (const ContainerRecord& c : pod.containers) {
    containers.push_back(ContainerStatusJson(c, false));
  }
  if (!init.empty()) status["initContainerStatuses"] = std::move(init);
  status["containerStatuses"] = std::move(containers);
  return status;
}

}  // namespace canhazgpu::simkubelet
