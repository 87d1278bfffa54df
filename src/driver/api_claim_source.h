// ClaimSource over the API server: claims and pods read with the client
// (its rate limit and retries). The daemon puts an informer's cache in
// front; this is the fallback and the simple case.
#pragma once

#include "driver/claim_preparer.h"
#include "kube/client.h"

namespace canhazgpu::driver {

// The label that names the person behind a pod (k8shazgpu run sets it).
inline constexpr char kUserLabel[] = "canhazgpu.dev/user";

class ApiClaimSource : public ClaimSource {
 public:
  explicit ApiClaimSource(kube::Client& client) : client_(client) {}
  absl::StatusOr<kube::ResourceClaim> GetClaim(const std::string& ns,
                                               const std::string& name) override;
  std::string UserOfPod(const std::string& ns, const std::string& pod) override;

 private:
  kube::Client& client_;
};

}  // namespace canhazgpu::driver
