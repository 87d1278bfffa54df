// ResourceClaim specs and DeviceClasses of resource.k8s.io/v1 as the
// allocator's dra::Claim and dra::DeviceClass: exactly or firstAvailable,
// ExactCount or All, CEL selectors, tolerations, matchAttribute and
// distinctAttribute constraints, adminAccess. Input the API server would
// have rejected is refused in one line that names the field, so nothing is
// allocated from a misread claim. Pure; thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "dra/allocator.h"
#include "kube/objects_resource.h"

namespace canhazgpu::clusterview {

// `holder` names the claim in the allocator's explanations ("ns/name").
absl::StatusOr<dra::Claim> ClaimFromSpec(const kube::ResourceClaimSpec& spec,
                                         const std::string& holder);

absl::StatusOr<dra::DeviceClass> DeviceClassFrom(const kube::DeviceClass& device_class);

}  // namespace canhazgpu::clusterview
