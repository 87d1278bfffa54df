// The pod status the simulated kubelet reports: each container's state as
// the kubelet's status manager shows it (waiting / running / terminated,
// lastState, restartCount, ready, started), the pod's phase from its
// containers, and its conditions (PodReadyToStartContainers, Initialized,
// ContainersReady, Ready, PodScheduled) with transition times kept across
// updates. Plain values and pure functions; not thread-safe to mutate.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace canhazgpu::simkubelet {

struct ContainerRecord {
  enum class State { kWaiting, kRunning, kTerminated };

  std::string name;
  std::string image;
  State state = State::kWaiting;
  std::string reason = "ContainerCreating";  // waiting or terminated
  std::string message;
  std::string started_at;  // RFC 3339, running and terminated
  std::string finished_at;
  int exit_code = 0;
  int signal = 0;
  int restart_count = 0;
  std::string container_id;                   // "sim://<pod uid>/<name>/<restart>"
  nlohmann::json last_terminated;             // the previous run's state.terminated, or null
  nlohmann::json allocated_resources_status;  // []ResourceStatus, or null

  bool Succeeded() const { return state == State::kTerminated && exit_code == 0; }
  // Marks it ended: reason Completed for 0, Error otherwise (as containerd).
  void Terminate(int code, int sig, const std::string& now, const std::string& why = "");
};

nlohmann::json ContainerStatusJson(const ContainerRecord& c, bool init_container);

struct PodRecord {
  std::string phase = "Pending";
  std::string reason;  // DeadlineExceeded, ...
  std::string message;
  std::string start_time;
  std::string host_ip;
  std::string pod_ip;          // its own on the pod network, or host_ip; "" until it has one
  bool sandbox_ready = false;  // claims prepared, containers being started
  std::vector<ContainerRecord> init_containers;
  std::vector<ContainerRecord> containers;
  // Condition type -> {status, lastTransitionTime}.
  std::map<std::string, std::pair<std::string, std::string>> transitions;
};

// The status to write: phase, conditions (transition times updated in
// `pod` where a condition changed), container statuses. `scheduled` is the
// PodScheduled condition the scheduler wrote, kept as it is (null: True).
nlohmann::json PodStatusJson(PodRecord& pod, const nlohmann::json& scheduled,
                             const std::string& now);

}  // namespace canhazgpu::simkubelet
