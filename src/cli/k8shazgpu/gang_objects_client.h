// One multi-node run's objects in the cluster (ADR 0019), created so that
// `cleanup` can always finish: the claim template, the Job (each rank
// behind the gang's scheduling gate), the headless Service, then owner
// references from the template and the Service to the Job (and a PodGroup
// owned by it, when the cluster's gang scheduling admits) - so deleting the
// Job deletes everything. Everything carries the run's labels. Also the
// gang's own admission steps: release the ranks' gates, suspend the Job
// (its pods go, holding nothing, not counted as failures) and resume it.
// Used from one thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/k8shazgpu/context.h"
#include "cli/k8shazgpu/run_objects.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

class GangObjectsClient {
 public:
  GangObjectsClient(Context& ctx, RunNames names) : ctx_(ctx), names_(std::move(names)) {}

  absl::Status CreateTemplate(const nlohmann::json& claim_spec);
  // ConfigMaps the ranks mount (the shipped working directory), before the Job.
  absl::Status CreateConfigMaps(const std::vector<nlohmann::json>& config_maps);
  // AlreadyExists for a taken --name says so in one line.
  absl::StatusOr<nlohmann::json> CreateJob(const nlohmann::json& job);
  absl::Status CreateService(const nlohmann::json& service);
  // After the Job (it names the Job as its owner).
  absl::Status CreatePodGroup(const kube::ResourceRef& ref, const nlohmann::json& group);
  // The Job as created (CreateJob's answer).
  const nlohmann::json& job() const { return *job_; }
  // The template, the ConfigMaps and the Service owned by the Job.
  absl::Status Adopt();
  // Removes kGangGate from the rank `pod` (as read); other gates stay.
  absl::Status Ungate(const nlohmann::json& pod);
  // spec.suspend of the Job.
  absl::Status SetSuspended(bool suspended);
  // Deletes the Job (its pods and their claims with it), the Service and
  // the template; errors are reported on stderr and otherwise ignored
  // (what is left carries the labels).
  void Delete();

  const RunNames& names() const { return names_; }

 private:
  Context& ctx_;
  const RunNames names_;
  bool template_created_ = false;
  bool service_created_ = false;
  std::optional<kube::ResourceRef> pod_group_;  // created by this run
  std::vector<std::string> config_maps_;        // created by this run
  std::optional<nlohmann::json> job_;
};

}  // namespace canhazgpu::cli::k8s
