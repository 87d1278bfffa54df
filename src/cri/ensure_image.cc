#include "cri/ensure_image.h"

#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cri {

absl::StatusOr<EnsuredImage> EnsureImage(ImageClient& client, const std::string& image,
                                         const std::optional<RegistryAuth>& auth) {
  ASSIGN_OR_RETURN(std::optional<ImageInfo> present, client.Status(image));
  if (present.has_value()) {
    return EnsuredImage{.image = std::move(*present), .pulled = false};
  }
  ASSIGN_OR_RETURN(std::string pulled_ref, client.Pull(image, auth));
  // The runtime's name for the result finds it even when `image` is a
  // reference the runtime normalises differently (nginx vs
  // docker.io/library/nginx:latest).
  ASSIGN_OR_RETURN(std::optional<ImageInfo> after, client.Status(pulled_ref));
  if (!after.has_value()) {
    return absl::InternalError(StrCat("the runtime at ", client.endpoint(), " pulled ", image,
                                      " as ", pulled_ref, " but then had no such image"));
  }
  return EnsuredImage{.image = std::move(*after), .pulled = true};
}

}  // namespace canhazgpu::cri
