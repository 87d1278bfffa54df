#include "simkubelet/node_object.h"

#include <sys/utsname.h>

#include <utility>

#include "core/status_macros.h"

namespace canhazgpu::simkubelet {

using nlohmann::json;

json NodeObject(const NodeSettings& node) {
  json labels = {{"kubernetes.io/hostname", node.name},
                 {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"},
                 {"canhazgpu.dev/gpu", "true"}};
  for (const auto& [k, v] : node.labels) labels[k] = v;
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", node.name}, {"labels", std::move(labels)}}},
          {"spec", json::object()}};
}

json NodeStatus(const NodeSettings& node, const std::string& now, const std::string& since) {
  auto condition = [&](const char* type, const char* status, const char* reason,
                       const char* message) {
    return json{{"type", type},       {"status", status},         {"reason", reason},
                {"message", message}, {"lastHeartbeatTime", now}, {"lastTransitionTime", since}};
  };
  struct utsname uts {};
  ::uname(&uts);
  const json resources = {{"cpu", node.cpu}, {"memory", node.memory}, {"pods", node.pods}};
  return {{"capacity", resources},
          {"allocatable", resources},
          {"conditions",
           {condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                      "kubelet has sufficient memory available"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                      "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID",
                      "kubelet has sufficient PID available"),
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")}},
          {"addresses",
           {{{"type", "InternalIP"}, {"address", node.host_ip}},
            {{"type", "Hostname"}, {"address", node.name}}}},
          {"nodeInfo",
           {{"machineID", node.name},
            {"systemUUID", node.name},
            {"bootID", node.boot_id},
            {"kernelVersion", uts.release},
            {"osImage", "k8shazgpu-sim"},
            {"containerRuntimeVersion", "sim://local-processes"},
            {"kubeletVersion", "v1.37.0-k8shazgpu-sim"},
            {"kubeProxyVersion", ""},
            {"operatingSystem", "linux"},
            {"architecture", "amd64"}}}};
}

absl::Status RegisterNode(kube::Client& client, const NodeSettings& node, const std::string& now) {
  const json object = NodeObject(node);
  absl::StatusOr<json> created = client.CreateObject(kube::kNodes, "", object);
  if (!created.ok() && kube::IsApiAlreadyExists(created.status())) {
    created = client.ReadModifyWrite(kube::kNodes, "", node.name, [&](json& existing) {
      for (const auto& [k, v] : object["metadata"]["labels"].items()) {
        existing["metadata"]["labels"][k] = v;
      }
      return absl::OkStatus();
    });
  }
  RETURN_IF_ERROR(created.status());
  return UpdateNodeStatus(client, node, now, now);
}

absl::Status UpdateNodeStatus(kube::Client& client, const NodeSettings& node,
                              const std::string& now, const std::string& since) {
  kube::PatchOptions options;
  options.subresource = "status";
  return client
      .Patch(kube::kNodes, "", node.name, kube::PatchType::kMerge,
             {{"status", NodeStatus(node, now, since)}}, options)
      .status();
}

}  // namespace canhazgpu::simkubelet
