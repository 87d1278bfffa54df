#include "driver/api_claim_source.h"

#include "core/status_macros.h"
#include "kube/objects_core.h"

namespace canhazgpu::driver {

absl::StatusOr<kube::ResourceClaim> ApiClaimSource::GetClaim(const std::string& ns,
                                                             const std::string& name) {
  ASSIGN_OR_RETURN(nlohmann::json object, client_.Get(kube::kResourceClaims, ns, name));
  return kube::ResourceClaim::FromJson(object);
}

std::string ApiClaimSource::UserOfPod(const std::string& ns, const std::string& pod) {
  absl::StatusOr<nlohmann::json> object = client_.Get(kube::kPods, ns, pod);
  if (!object.ok()) return "";
  absl::StatusOr<kube::Pod> typed = kube::Pod::FromJson(*object);
  if (!typed.ok()) return "";
  auto it = typed->metadata.labels.find(kUserLabel);
  return it == typed->metadata.labels.end() ? "" : it->second;
}

}  // namespace canhazgpu::driver
