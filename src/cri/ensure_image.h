// EnsureImage: an image on the node, pulled only when the runtime does not
// have it yet — the cache agent's one step per image item. Thread-safe as
// ImageClient is; two callers ensuring the same image at once may both pull
// (the runtime deduplicates the layers).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cri/image_client.h"
#include "cri/registry_auth.h"

namespace canhazgpu::cri {

struct EnsuredImage {
  ImageInfo image;
  bool pulled = false;  // false: it was there already
};

// ImageStatus first; when absent, PullImage and ImageStatus again (for the
// size and digests the pull's answer does not carry).
absl::StatusOr<EnsuredImage> EnsureImage(ImageClient& client, const std::string& image,
                                         const std::optional<RegistryAuth>& auth = std::nullopt);

}  // namespace canhazgpu::cri
