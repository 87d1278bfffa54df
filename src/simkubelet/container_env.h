// A container's environment as the kubelet and the runtime build it: a
// minimal base (PATH, HOSTNAME = the pod's hostname, HOME = its work
// directory), then the
// container's `env` in order (plain values with $(VAR) references to
// earlier ones expanded, and valueFrom.fieldRef), then the CDI edits' env —
// a later definition of a name replaces an earlier one, as the runtime
// applies them. Device nodes and mounts cannot be applied without a
// runtime; they are recorded for the process to see in
// CANHAZGPU_SIM_DEVICE_NODES and CANHAZGPU_SIM_MOUNTS (comma-separated).
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "simkubelet/cdi_devices.h"

namespace canhazgpu::simkubelet {

struct EnvContext {
  std::string work_dir;
  std::string host_ip;  // status.hostIP
  std::string pod_ip;   // status.podIP and status.podIPs; "" = host_ip
};

// "NAME=value" entries. An env entry the simulated kubelet cannot resolve
// (secretKeyRef, configMapKeyRef, an unknown field) is an error worded for
// the CreateContainerConfigError it becomes.
absl::StatusOr<std::vector<std::string>> ContainerEnvironment(const nlohmann::json& pod,
                                                              const nlohmann::json& container,
                                                              const EnvContext& context,
                                                              const CdiEdits& cdi);

// command + args with $(VAR) references expanded from `env` ("$$" escapes),
// as the kubelet expands them.
std::vector<std::string> ContainerArgv(const nlohmann::json& container,
                                       const std::vector<std::string>& env);

}  // namespace canhazgpu::simkubelet
