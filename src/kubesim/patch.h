// The four PATCH bodies an API server takes, applied to a stored object.
// Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

enum class PatchType {
  kMerge,      // application/merge-patch+json (RFC 7386)
  kJson,       // application/json-patch+json (RFC 6902)
  kStrategic,  // application/strategic-merge-patch+json
  kApply,      // application/apply-patch+yaml (server-side apply)
};

// nullopt for any other content type (the server answers 415).
std::optional<PatchType> PatchTypeOf(const std::string& content_type);

// The body as JSON: apply patches may be YAML.
absl::StatusOr<nlohmann::json> ParsePatchBody(PatchType type, const std::string& body);

// `original` with `patch` applied. Strategic merge and apply merge lists of
// objects that all have a `name` by that name (containers, env, volumes,
// resourceClaims, requests...) and replace other lists; `$patch: delete`
// removes an element and the `$setElementOrder`/`$retainKeys` directives are
// accepted and ignored. Server-side apply keeps no per-field ownership: the
// last applier wins every field it sends (documented in docs/kubesim.md).
absl::StatusOr<nlohmann::json> ApplyPatch(PatchType type, const nlohmann::json& original,
                                          const nlohmann::json& patch);

}  // namespace canhazgpu::kubesim
