#include "driver/api_claim_source.h"

#include "core/status_macros.h"
#include "kube/objects_core.h"

namespace canhazgpu::driver {

ApiClaimSource::~ApiClaimSource() { StopCache(); }

void ApiClaimSource::StartCache(const std::string& node_name) {
  if (informer_ != nullptr) return;
  informer_ = std::make_unique<kube::Informer>(client_, kube::kResourceClaims, /*ns=*/"",
                                               kube::ListOptions{}, kube::InformerHandlers{});
  informer_->Start();
  if (node_name.empty()) return;
  pod_informer_ = std::make_unique<kube::Informer>(
      client_, kube::kPods, /*ns=*/"",
      kube::ListOptions{.field_selector = "spec.nodeName=" + node_name}, kube::InformerHandlers{});
  pod_informer_->Start();
}

void ApiClaimSource::StopCache() {
  if (informer_ != nullptr) informer_->Stop();
  if (pod_informer_ != nullptr) pod_informer_->Stop();
}

std::optional<kube::ResourceClaim> ApiClaimSource::FromCache(const std::string& ns,
                                                             const std::string& name,
                                                             const std::string& uid) const {
  if (informer_ == nullptr) return std::nullopt;
  std::optional<nlohmann::json> object = informer_->Get(ns, name);
  if (!object || object->value("/metadata/uid"_json_pointer, std::string()) != uid) {
    return std::nullopt;
  }
  absl::StatusOr<kube::ResourceClaim> claim = kube::ResourceClaim::FromJson(*object);
  // Not yet allocated in the cache: the watch may lag the scheduler's write.
  if (!claim.ok() || claim->status.allocation.IsEmpty()) return std::nullopt;
  return *std::move(claim);
}

bool ApiClaimSource::Cached(const std::string& ns, const std::string& name,
                            const std::string& uid) const {
  return FromCache(ns, name, uid).has_value();
}

absl::StatusOr<kube::ResourceClaim> ApiClaimSource::GetClaim(const std::string& ns,
                                                             const std::string& name,
                                                             const std::string& uid,
                                                             Deadline deadline) {
  if (std::optional<kube::ResourceClaim> cached = FromCache(ns, name, uid)) {
    ++cache_hits_;
    return *std::move(cached);
  }
  ++fetches_;
  ASSIGN_OR_RETURN(nlohmann::json object,
                   client_.Get(kube::kResourceClaims, ns, name, {.deadline = deadline}));
  return kube::ResourceClaim::FromJson(object);
}

std::string ApiClaimSource::UserOfPod(const std::string& ns, const std::string& pod,
                                      Deadline deadline) {
  std::optional<nlohmann::json> cached;
  if (pod_informer_ != nullptr) cached = pod_informer_->Get(ns, pod);
  absl::StatusOr<nlohmann::json> object = nlohmann::json();
  if (cached) {
    object = *std::move(cached);
  } else {
    object = client_.Get(kube::kPods, ns, pod, {.deadline = deadline});
  }
  if (!object.ok()) return "";
  absl::StatusOr<kube::Pod> typed = kube::Pod::FromJson(*object);
  if (!typed.ok()) return "";
  auto it = typed->metadata.labels.find(kUserLabel);
  return it == typed->metadata.labels.end() ? "" : it->second;
}

}  // namespace canhazgpu::driver
