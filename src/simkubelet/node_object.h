// The simulated node's Node object, as the kubelet registers and keeps it:
// labels (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch,
// canhazgpu.dev/gpu=true — the node selector of deploy/'s DaemonSet — and
// any given), addresses, nodeInfo, capacity and allocatable (cpu, memory,
// pods) and the conditions with Ready=True, its heartbeat renewed by each
// status update. Pure builders plus two calls to the API; thread-safe.
#pragma once

#include <map>
#include <string>

#include "absl/status/status.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::simkubelet {

struct NodeSettings {
  std::string name;
  std::map<std::string, std::string> labels;  // beside the standard ones
  std::string host_ip = "127.0.0.1";
  std::string cpu = "8";
  std::string memory = "32Gi";
  std::string pods = "110";
  std::string boot_id;
};

// The Node as created (metadata only; the status is a subresource).
nlohmann::json NodeObject(const NodeSettings& node);
// Its status at `now`; conditions changed no earlier than `since`.
nlohmann::json NodeStatus(const NodeSettings& node, const std::string& now,
                          const std::string& since);

// Creates the Node, or adds our labels to the one there (a kubelet
// restarting on the same node), then writes its status.
absl::Status RegisterNode(kube::Client& client, const NodeSettings& node, const std::string& now);
// The heartbeat: the status with lastHeartbeatTime `now`.
absl::Status UpdateNodeStatus(kube::Client& client, const NodeSettings& node,
                              const std::string& now, const std::string& since);

}  // namespace canhazgpu::simkubelet
