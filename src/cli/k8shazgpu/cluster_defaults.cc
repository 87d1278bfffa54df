#include "cli/k8shazgpu/cluster_defaults.h"

#include <memory>

#include "cli/k8shazgpu/run_command.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;

// An image reference has no blanks or control characters; the registry
// judges the rest.
bool ImageReference(const std::string& image) {
  if (image.empty() || image.size() > 512) return false;
  for (unsigned char c : image) {
    if (c <= ' ' || c == 0x7f) return false;
  }
  return true;
}

std::string Where() { return StrCat("configmap ", kDefaultsNamespace, "/", kDefaultsConfigMap); }

}  // namespace

absl::StatusOr<ClusterDefaults> ParseClusterDefaults(const json& config_map) {
  const json data = config_map.value("data", json::object());
  ClusterDefaults out{.image = std::string(Trim(kube::StringField(data, "image"))),
                      .device_class = std::string(Trim(kube::StringField(data, "deviceClass"))),
                      .namespace_name = std::string(Trim(kube::StringField(data, "namespace")))};
  if (!out.image.empty() && !ImageReference(out.image)) {
    return absl::InvalidArgumentError(
        StrCat(Where(), ": image '", out.image, "' is not an image reference"));
  }
  if (!out.device_class.empty() && !ValidObjectName(out.device_class)) {
    return absl::InvalidArgumentError(
        StrCat(Where(), ": deviceClass '", out.device_class, "' is not a DeviceClass name"));
  }
  if (!out.namespace_name.empty() && !ValidObjectName(out.namespace_name)) {
    return absl::InvalidArgumentError(
        StrCat(Where(), ": namespace '", out.namespace_name, "' is not a namespace name"));
  }
  return out;
}

absl::StatusOr<ClusterDefaults> ReadClusterDefaults(kube::Client& client) {
  absl::StatusOr<json> map = client.Get(kube::kConfigMaps, kDefaultsNamespace, kDefaultsConfigMap);
  const std::string reason = kube::ReasonOf(map.status());
  if (kube::IsApiNotFound(map.status()) || reason == "Forbidden") return ClusterDefaults{};
  if (!map.ok()) return map.status();
  return ParseClusterDefaults(*map);
}

absl::Status ApplyClusterDefaults(Context& ctx, const ParsedFlags& flags, RunRequest& request) {
  RETURN_IF_ERROR(ctx.Connect());
  if (ctx.cluster_defaults == nullptr) {
    ASSIGN_OR_RETURN(ClusterDefaults read, ReadClusterDefaults(*ctx.client));
    ctx.cluster_defaults = std::make_shared<const ClusterDefaults>(std::move(read));
  }
  const ClusterDefaults& defaults = *ctx.cluster_defaults;
  if (!flags.Has("class") && !defaults.device_class.empty()) {
    request.device_class = defaults.device_class;
  }
  if (flags.Has("image")) {
    request.image_origin.clear();
  } else if (std::optional<std::string> env = ctx.getenv("K8SHAZGPU_IMAGE"); env && !env->empty()) {
    request.image = *env;
    request.image_origin = "K8SHAZGPU_IMAGE";
  } else if (!defaults.image.empty()) {
    request.image = defaults.image;
    request.image_origin = StrCat("the cluster's default, ", Where());
  } else {
    request.image = kDefaultRunImage;
    request.image_origin = kBuiltInImageOrigin;
  }
  return absl::OkStatus();
}

}  // namespace canhazgpu::cli::k8s
