#include "simkubelet/container_env.h"

#include <map>
#include <utility>

#include "core/strings.h"
#include "simkubelet/pod_hosts.h"

namespace canhazgpu::simkubelet {
namespace {

using nlohmann::json;

constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Names in definition order, with the last value of each.
class Env {
 public:
  void Set(const std::string& name, std::string value) {
    auto [it, inserted] = values_.insert_or_assign(name, std::move(value));
    if (inserted) order_.push_back(name);
  }
  void SetEntry(const std::string& entry) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) return;
    Set(entry.substr(0, eq), entry.substr(eq + 1));
  }
  const std::map<std::string, std::string>& values() const { return values_; }
  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    for (const std::string& name : order_) out.push_back(StrCat(name, "=", values_.at(name)));
    return out;
  }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> order_;
};

// Kubernetes' $(VAR) expansion: defined names are replaced, "$$" is a
// literal "$", anything else stays as written.
std::string Expand(const std::string& text, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out += text[i];
      continue;
    }
    if (text[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    const size_t close = text.find(')', i);
    if (text[i + 1] == '(' && close != std::string::npos) {
      const std::string name = text.substr(i + 2, close - i - 2);
      auto it = vars.find(name);
      if (it != vars.end()) {
        out += it->second;
        i = close;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

// metadata.labels['key'] -> key
bool Subscript(const std::string& path, const std::string& prefix, std::string& key) {
  if (path.rfind(prefix + "['", 0) != 0 || path.size() < prefix.size() + 4 ||
      path.substr(path.size() - 2) != "']") {
    return false;
  }
  key = path.substr(prefix.size() + 2, path.size() - prefix.size() - 4);
  return true;
}

absl::StatusOr<std::string> FieldValue(const json& pod, const std::string& path,
                                       const EnvContext& context) {
  auto text = [&](const json::json_pointer& p) {
    const json v = pod.value(p, json());
    return v.is_string() ? v.get<std::string>() : std::string();
  };
  if (path == "metadata.name") return text("/metadata/name"_json_pointer);
  if (path == "metadata.namespace") return text("/metadata/namespace"_json_pointer);
  if (path == "metadata.uid") return text("/metadata/uid"_json_pointer);
  if (path == "spec.nodeName") return text("/spec/nodeName"_json_pointer);
  if (path == "spec.serviceAccountName") return text("/spec/serviceAccountName"_json_pointer);
  if (path == "status.hostIP" || path == "status.hostIPs") return context.host_ip;
  if (path == "status.podIP" || path == "status.podIPs") {
    return context.pod_ip.empty() ? context.host_ip : context.pod_ip;
  }
  std::string key;
  if (Subscript(path, "metadata.labels", key)) {
    return text(json::json_pointer("/metadata/labels") / key);
  }
  if (Subscript(path, "metadata.annotations", key)) {
    return text(json::json_pointer("/metadata/annotations") / key);
  }
  return absl::InvalidArgumentError(
      StrCat("unsupported fieldRef fieldPath \"", path, "\" in the simulated kubelet"));
}

std::string JoinComma(const std::vector<std::string>& items) { return Join(items, ","); }

}  // namespace

absl::StatusOr<std::vector<std::string>> ContainerEnvironment(const json& pod,
                                                              const json& container,
                                                              const EnvContext& context,
                                                              const CdiEdits& cdi) {
  Env env;
  env.Set("PATH", kDefaultPath);
  env.Set("HOSTNAME", PodHostname(pod));
  env.Set("HOME", context.work_dir);
  for (const json& var : container.value("env", json::array())) {
    const std::string name = var.value("name", "");
    if (var.contains("valueFrom")) {
      const json field = var["valueFrom"].value("fieldRef", json());
      if (!field.is_object()) {
        return absl::InvalidArgumentError(
            StrCat("env ", name,
                   ": only value and valueFrom.fieldRef are supported by the "
                   "simulated kubelet"));
      }
      absl::StatusOr<std::string> value = FieldValue(pod, field.value("fieldPath", ""), context);
      if (!value.ok())
        return absl::InvalidArgumentError(StrCat("env ", name, ": ", value.status().message()));
      env.Set(name, *value);
    } else {
      env.Set(name, Expand(var.value("value", ""), env.values()));
    }
  }
  for (const std::string& entry : cdi.env) env.SetEntry(entry);
  if (!cdi.device_nodes.empty()) env.Set("CANHAZGPU_SIM_DEVICE_NODES", JoinComma(cdi.device_nodes));
  if (!cdi.mounts.empty()) env.Set("CANHAZGPU_SIM_MOUNTS", JoinComma(cdi.mounts));
  return env.Entries();
}

std::vector<std::string> ContainerArgv(const json& container, const std::vector<std::string>& env) {
  std::map<std::string, std::string> vars;
  for (const std::string& entry : env) {
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  std::vector<std::string> argv;
  for (const char* key : {"command", "args"}) {
    for (const json& a : container.value(key, json::array())) {
      if (a.is_string()) argv.push_back(Expand(a.get<std::string>(), vars));
    }
  }
  return argv;
}

}  // namespace canhazgpu::simkubelet
