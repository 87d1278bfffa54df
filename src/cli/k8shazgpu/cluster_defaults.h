// The cluster's defaults for k8shazgpu (issue 33), set by the platform
// engineer in one place: the ConfigMap canhazgpu-system/k8shazgpu-defaults
// that deploy/ creates (readable by every authenticated user), with
//   image        the image `run` and `reserve` use when none is named
//   deviceClass  the DeviceClass when --class is not given
//   namespace    the namespace of users whose kubeconfig context names none
// An absent ConfigMap, one the user may not read, or an empty key means
// "not set". What wins, for the image: --image, K8SHAZGPU_IMAGE, the
// cluster's, the built-in kDefaultRunImage; the output says which.
// Thread-compatible; the command's thread.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "cli/common/flags.h"
#include "cli/k8shazgpu/context.h"
#include "cli/k8shazgpu/run_request.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

inline constexpr char kDefaultsNamespace[] = "canhazgpu-system";
inline constexpr char kDefaultsConfigMap[] = "k8shazgpu-defaults";

// RunRequest::image_origin when nothing chose the image.
inline constexpr char kBuiltInImageOrigin[] = "the built-in default";

struct ClusterDefaults {
  std::string image;
  std::string device_class;
  std::string namespace_name;
};

// The defaults a ConfigMap (as read) holds. InvalidArgument, one line
// naming the key, for a value no object could use (an image with spaces, a
// class or namespace that is not a DNS name).
absl::StatusOr<ClusterDefaults> ParseClusterDefaults(const nlohmann::json& config_map);

// Reads the ConfigMap; none (absent, forbidden) is all unset. A malformed
// one is an error: the platform engineer set something that does not work.
absl::StatusOr<ClusterDefaults> ReadClusterDefaults(kube::Client& client);

// Fills in what `flags` left to the defaults: the image (and its origin)
// unless --image, the device class unless --class. Connects.
absl::Status ApplyClusterDefaults(Context& ctx, const ParsedFlags& flags, RunRequest& request);

}  // namespace canhazgpu::cli::k8s
