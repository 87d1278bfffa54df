#include "cli/k8shazgpu/gang_objects_client.h"

#include <cstdio>

#include "cli/k8shazgpu/gang_objects.h"
#include "cli/k8shazgpu/run_objects_client.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::cli::k8s {

using nlohmann::json;

absl::Status GangObjectsClient::CreateTemplate(const json& claim_spec) {
  absl::StatusOr<json> made = ctx_.client->CreateObject(
      kube::kResourceClaimTemplates, ctx_.namespace_name, ClaimTemplateObject(names_, claim_spec));
  if (!made.ok()) return made.status();
  template_created_ = true;
  return absl::OkStatus();
}

absl::Status GangObjectsClient::CreateConfigMaps(const std::vector<json>& config_maps) {
  return CreateRunConfigMaps(ctx_, config_maps, config_maps_);
}

absl::StatusOr<json> GangObjectsClient::CreateJob(const json& job) {
  ASSIGN_OR_RETURN(json made, CreateNamedRunObject(ctx_, kube::kJobs, "job", names_.pod, job));
  job_ = made;
  return made;
}

absl::Status GangObjectsClient::CreateService(const json& service) {
  absl::StatusOr<json> made =
      ctx_.client->CreateObject(kube::kServices, ctx_.namespace_name, service);
  if (!made.ok()) return made.status();
  service_created_ = true;
  return absl::OkStatus();
}

absl::Status GangObjectsClient::CreatePodGroup(const kube::ResourceRef& ref, const json& group) {
  absl::StatusOr<json> made = ctx_.client->CreateObject(ref, ctx_.namespace_name, group);
  if (!made.ok()) return made.status();
  pod_group_ = ref;
  return absl::OkStatus();
}

absl::Status GangObjectsClient::Adopt() {
  if (!job_) return absl::FailedPreconditionError("no job to own the run's objects");
  const json owned = {
      {"metadata", {{"ownerReferences", json::array({OwnerReferenceToJob(*job_)})}}}};
  absl::StatusOr<json> patched =
      ctx_.client->Patch(kube::kResourceClaimTemplates, ctx_.namespace_name, names_.claim,
                         kube::PatchType::kMerge, owned);
  if (!patched.ok()) return patched.status();
  for (const std::string& map : config_maps_) {
    patched = ctx_.client->Patch(kube::kConfigMaps, ctx_.namespace_name, map,
                                 kube::PatchType::kMerge, owned);
    if (!patched.ok()) return patched.status();
  }
  patched = ctx_.client->Patch(kube::kServices, ctx_.namespace_name, names_.pod,
                               kube::PatchType::kMerge, owned);
  return patched.status();
}

absl::Status GangObjectsClient::Ungate(const json& pod) {
  const std::string name = kube::StringAt(pod, "/metadata/name"_json_pointer);
  absl::StatusOr<json> written =
      ctx_.client->ReadModifyWrite(kube::kPods, ctx_.namespace_name, name, [](json& current) {
        json& gates = current["spec"]["schedulingGates"];
        if (!gates.is_array()) return absl::OkStatus();
        json kept = json::array();
        for (const json& gate : gates)
          if (kube::StringField(gate, "name") != kGangGate) kept.push_back(gate);
        if (kept.empty()) {
          current["spec"].erase("schedulingGates");
        } else {
          gates = kept;
        }
        return absl::OkStatus();
      });
  return written.status();
}

absl::Status GangObjectsClient::SetSuspended(bool suspended) {
  absl::StatusOr<json> patched =
      ctx_.client->Patch(kube::kJobs, ctx_.namespace_name, names_.pod, kube::PatchType::kMerge,
                         {{"spec", {{"suspend", suspended}}}});
  return patched.status();
}

void GangObjectsClient::Delete() {
  kube::Client& client = *ctx_.client;
  const std::string& ns = ctx_.namespace_name;
  auto report = [&](const absl::Status& s, const std::string& what) {
    if (s.ok() || kube::IsApiNotFound(s)) return;
    std::fprintf(stderr, "k8shazgpu: could not delete %s (labelled %s=%s): %s\n", what.c_str(),
                 kRunLabel, names_.run_id.c_str(), std::string(s.message()).c_str());
  };
  // Background: the garbage collector deletes the ranks, and the kubelet
  // frees their devices as each stops.
  if (job_) {
    report(client.Delete(kube::kJobs, ns, names_.pod, {.propagation = "Background"}),
           "job " + names_.pod);
  }
  if (service_created_)
    report(client.Delete(kube::kServices, ns, names_.pod), "service " + names_.pod);
  if (pod_group_) report(client.Delete(*pod_group_, ns, names_.pod), "PodGroup " + names_.pod);
  for (const std::string& map : config_maps_)
    report(client.Delete(kube::kConfigMaps, ns, map), "ConfigMap " + map);
  if (template_created_) {
    report(client.Delete(kube::kResourceClaimTemplates, ns, names_.claim),
           "ResourceClaimTemplate " + names_.claim);
  }
}

}  // namespace canhazgpu::cli::k8s
