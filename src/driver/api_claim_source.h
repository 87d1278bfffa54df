// ClaimSource over the API server: claims and pods read with the client
// (its rate limit and retries). With StartCache() claims come from an
// informer's cache of every namespace's ResourceClaims (the kubelet asks
// for a claim the scheduler allocated moments ago, so the cache usually has
// it and a prepare costs no request); a claim the cache lacks, holds under
// another uid (deleted and created again) or holds not yet allocated (the
// watch lags the scheduler) is fetched with a GET. Likewise the pods bound
// to this node, whose user label a prepare records: from a second
// informer's cache (spec.nodeName=NODE), a GET for one it lacks. Churning
// pods then cost the rate limit nothing on the prepare path. Thread-safe.
#pragma once

#include <atomic>
#include <memory>

#include "driver/claim_preparer.h"
#include "kube/client.h"
#include "kube/informer.h"

namespace canhazgpu::driver {

// The label that names the person behind a pod (k8shazgpu run sets it).
inline constexpr char kUserLabel[] = "canhazgpu.dev/user";

class ApiClaimSource : public ClaimSource {
 public:
  explicit ApiClaimSource(kube::Client& client) : client_(client) {}
  ~ApiClaimSource() override;

  // Starts the informers (pods: those bound to `node_name`; none when it is
  // empty); reads use their caches from then on. Returns at once: until the
  // first list is in, every read is a GET.
  void StartCache(const std::string& node_name = "");
  // Ends the informer's watch (at once); reads GET again.
  void StopCache();

  absl::StatusOr<kube::ResourceClaim> GetClaim(const std::string& ns, const std::string& name,
                                               const std::string& uid, Deadline deadline) override;
  std::string UserOfPod(const std::string& ns, const std::string& pod, Deadline deadline) override;

  // Whether the cache holds the claim under this uid, allocated.
  bool Cached(const std::string& ns, const std::string& name, const std::string& uid) const;
  // Claims read from the cache, and fetched from the API server.
  int64_t cache_hits() const { return cache_hits_; }
  int64_t fetches() const { return fetches_; }

 private:
  std::optional<kube::ResourceClaim> FromCache(const std::string& ns, const std::string& name,
                                               const std::string& uid) const;

  kube::Client& client_;
  std::unique_ptr<kube::Informer> informer_;      // set before any read, by StartCache
  std::unique_ptr<kube::Informer> pod_informer_;  // likewise
  std::atomic<int64_t> cache_hits_{0};
  std::atomic<int64_t> fetches_{0};
};

}  // namespace canhazgpu::driver
