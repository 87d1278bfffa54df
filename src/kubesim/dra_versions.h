// The older versions of resource.k8s.io that a 1.34 API server still
// serves beside v1 — v1beta1 and v1beta2 — stored as v1 and converted at
// the HTTP boundary, as the real server converts through its internal
// version. Published manifests (NVIDIA's gpu-test7 and gpu-test8, many
// articles) are still v1beta1.
//   - v1beta2 has v1's shape: only apiVersion differs.
//   - v1beta1 has the request fields of ExactDeviceRequest flat in each
//     DeviceRequest (v1 wraps them in `exactly`), and a device's fields
//     in `basic` (v1 has them inline).
// Error causes a v1 object earned are reported at their v1beta1 paths.
// The OpenAPI v3 documents kubectl reads for these versions are made from
// v1's. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

inline constexpr char kDraGroup[] = "resource.k8s.io";

// "v1beta1" or "v1beta2" when `parts` (a request path's segments) address
// one of those versions of resource.k8s.io; nullopt otherwise.
std::optional<std::string> OlderDraVersionOf(const std::vector<std::string>& parts);
bool IsOlderDraVersion(const std::string& group, const std::string& version);
// The versions served besides v1, newest first.
const std::vector<std::string>& OlderDraVersions();

// An object, a list of objects, or a watch event's object written at
// `version`, as v1. Objects of other groups are returned unchanged.
nlohmann::json DraToV1(const std::string& version, nlohmann::json object);
// The reverse: objects and lists of resource.k8s.io/v1 (Table rows' objects
// too) as `version`; a Status's causes at that version's paths.
nlohmann::json DraFromV1(const std::string& version, nlohmann::json object);

// The OpenAPI v3 document of resource.k8s.io/`version`, made from v1's;
// empty for another version.
const std::string& OlderDraOpenApiDocument(const std::string& version);

}  // namespace canhazgpu::kubesim
