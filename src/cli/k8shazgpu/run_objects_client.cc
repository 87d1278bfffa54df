#include "cli/k8shazgpu/run_objects_client.h"

#include <cstdio>

#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {

using nlohmann::json;

absl::Status RunObjectsClient::CreateClaim(const json& claim_spec) {
  kube::Client& client = *ctx_.client;
  const std::string& ns = ctx_.namespace_name;
  if (!shared()) {
    absl::StatusOr<json> made = client.CreateObject(kube::kResourceClaimTemplates, ns,
                                                    ClaimTemplateObject(names_, claim_spec));
    if (!made.ok()) return made.status();
    claim_created_ = true;
    return absl::OkStatus();
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::StatusOr<json> existing = client.Get(kube::kResourceClaims, ns, share_);
    if (existing.ok()) {
      if (absl::Status may = MayJoinSharedClaim(*existing, names_.user); !may.ok()) return may;
      if ((*existing)["spec"] != claim_spec) {
        return absl::InvalidArgumentError(StrCat("the shared claim '", share_,
                                                 "' exists with another request (",
                                                 (*existing)["spec"].dump(),
                                                 "); give the same selection flags as its first "
                                                 "run, or another --share name"));
      }
      return absl::OkStatus();
    }
    if (!kube::IsApiNotFound(existing.status())) return existing.status();
    absl::StatusOr<json> made = client.CreateObject(
        kube::kResourceClaims, ns, SharedClaimObject(names_, share_, claim_spec, share_with_));
    if (made.ok()) {
      claim_created_ = true;
      return absl::OkStatus();
    }
    // Another run made it meanwhile: use theirs.
    if (!kube::IsApiAlreadyExists(made.status())) return made.status();
  }
  return absl::AbortedError(StrCat("the shared claim '", share_, "' kept changing; try again"));
}

absl::Status CreateRunConfigMaps(Context& ctx, const std::vector<json>& config_maps,
                                 std::vector<std::string>& created) {
  for (const json& map : config_maps) {
    absl::StatusOr<json> made =
        ctx.client->CreateObject(kube::kConfigMaps, ctx.namespace_name, map);
    if (!made.ok()) return made.status();
    created.push_back(map["metadata"].value("name", ""));
  }
  return absl::OkStatus();
}

absl::Status RunObjectsClient::CreateConfigMaps(const std::vector<json>& config_maps) {
  return CreateRunConfigMaps(ctx_, config_maps, config_maps_);
}

absl::StatusOr<json> CreateNamedRunObject(Context& ctx, const kube::ResourceRef& ref,
                                          const char* what, const std::string& name,
                                          const json& object) {
  absl::StatusOr<json> made = ctx.client->CreateObject(ref, ctx.namespace_name, object);
  if (!made.ok() && kube::IsApiAlreadyExists(made.status())) {
    return absl::AlreadyExistsError(StrCat("a ", what, " named '", name,
                                           "' already exists in namespace ", ctx.namespace_name,
                                           "; choose another --name, or remove it with "
                                           "'k8shazgpu cleanup --name ",
                                           name, "'"));
  }
  return made;
}

absl::StatusOr<json> RunObjectsClient::CreatePod(const json& pod) {
  ASSIGN_OR_RETURN(json made, CreateNamedRunObject(ctx_, kube::kPods, "pod", names_.pod, pod));
  pod_ = made;
  return made;
}

absl::Status RunObjectsClient::Adopt() {
  if (!pod_) return absl::FailedPreconditionError("no pod to own the claim");
  const json owner = OwnerReferenceTo(*pod_);
  for (const std::string& map : config_maps_) {
    absl::StatusOr<json> patched =
        ctx_.client->Patch(kube::kConfigMaps, ctx_.namespace_name, map, kube::PatchType::kMerge,
                           {{"metadata", {{"ownerReferences", json::array({owner})}}}});
    if (!patched.ok()) return patched.status();
  }
  if (!shared()) {
    absl::StatusOr<json> patched = ctx_.client->Patch(
        kube::kResourceClaimTemplates, ctx_.namespace_name, names_.claim, kube::PatchType::kMerge,
        {{"metadata", {{"ownerReferences", json::array({owner})}}}});
    return patched.status();
  }
  // Every run using the shared claim owns it; it goes when the last does.
  absl::StatusOr<json> written = ctx_.client->ReadModifyWrite(
      kube::kResourceClaims, ctx_.namespace_name, share_, [&](json& claim) {
        json& owners = claim["metadata"]["ownerReferences"];
        if (!owners.is_array()) owners = json::array();
        owners.push_back(owner);
        return absl::OkStatus();
      });
  if (written.ok()) adopted_ = true;
  return written.status();
}

void RunObjectsClient::Delete() {
  kube::Client& client = *ctx_.client;
  const std::string& ns = ctx_.namespace_name;
  auto report = [&](const absl::Status& s, const std::string& what) {
    if (s.ok() || kube::IsApiNotFound(s)) return;
    std::fprintf(stderr, "k8shazgpu: could not delete %s (labelled %s=%s): %s\n", what.c_str(),
                 kRunLabel, names_.run_id.c_str(), std::string(s.message()).c_str());
  };
  if (pod_) report(client.Delete(kube::kPods, ns, names_.pod), "pod " + names_.pod);
  for (const std::string& map : config_maps_) {
    report(client.Delete(kube::kConfigMaps, ns, map), "ConfigMap " + map);
  }
  if (!shared()) {
    if (claim_created_) {
      report(client.Delete(kube::kResourceClaimTemplates, ns, names_.claim),
             "ResourceClaimTemplate " + names_.claim);
    }
    return;
  }
  // The shared claim. Once this run's pod owns it, the garbage collector
  // deletes it with its last owner; before, a claim this run made and no
  // one has adopted since is deleted here - the resourceVersion
  // precondition keeps that from racing another run adopting it.
  if (adopted_ || !claim_created_) return;
  absl::StatusOr<json> claim = client.Get(kube::kResourceClaims, ns, share_);
  if (!claim.ok()) return report(claim.status(), "ResourceClaim " + share_);
  if (!(*claim)["metadata"].value("ownerReferences", json::array()).empty()) return;
  report(client.Delete(
             kube::kResourceClaims, ns, share_,
             {.precondition_resource_version = (*claim)["metadata"].value("resourceVersion", "")}),
         "ResourceClaim " + share_);
}

}  // namespace canhazgpu::cli::k8s
