// One run's objects in the cluster, created in the order ADR 0008 sets so
// that `cleanup` can always finish: the claim template (or the --share
// claim), then the Pod, then an owner reference from the template to the
// Pod - so that deleting the Pod deletes the rest. Everything carries the
// run's labels, so an interruption between two steps leaves nothing
// `cleanup` cannot find; Delete() removes what this run made. Used from
// one thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/k8shazgpu/context.h"
#include "cli/k8shazgpu/run_objects.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// Creates the object that carries a run's name (`what`: "pod", "job"); an
// AlreadyExists says, in one line, to choose another --name or clean up.
absl::StatusOr<nlohmann::json> CreateNamedRunObject(Context& ctx, const kube::ResourceRef& ref,
                                                    const char* what, const std::string& name,
                                                    const nlohmann::json& object);

// Creates `config_maps` (labelled as their run) in the context's namespace,
// appending each name to `created` as it is made, so that a failure part
// way leaves `created` naming what to delete.
absl::Status CreateRunConfigMaps(Context& ctx, const std::vector<nlohmann::json>& config_maps,
                                 std::vector<std::string>& created);

class RunObjectsClient {
 public:
  RunObjectsClient(Context& ctx, RunNames names, std::string share,
                   std::vector<std::string> share_with = {})
      : ctx_(ctx),
        names_(std::move(names)),
        share_(std::move(share)),
        share_with_(std::move(share_with)) {}

  // The template, or the shared claim: created (letting `share_with` join
  // it), or (--share) reused when it exists with the same request
  // (InvalidArgument when it asks for something else) and its creator let
  // this user join (PermissionDenied otherwise).
  absl::Status CreateClaim(const nlohmann::json& claim_spec);
  // ConfigMaps the Pod mounts (labelled as the run), before the Pod.
  absl::Status CreateConfigMaps(const std::vector<nlohmann::json>& config_maps);
  // The Pod; AlreadyExists for a taken --name says so in one line.
  absl::StatusOr<nlohmann::json> CreatePod(const nlohmann::json& pod);
  // The owner references from the claim (template or shared) and the
  // ConfigMaps to the Pod.
  absl::Status Adopt();
  // Deletes the Pod, the ConfigMaps and the template; a shared claim this run made that
  // no pod owns yet (a later one goes with its last owner); errors are reported on stderr and
  // otherwise ignored (what is left carries the labels).
  void Delete();

  const RunNames& names() const { return names_; }
  bool shared() const { return !share_.empty(); }

 private:
  Context& ctx_;
  const RunNames names_;
  const std::string share_;
  const std::vector<std::string> share_with_;
  bool claim_created_ = false;  // by this run
  bool adopted_ = false;        // the shared claim lists this run's pod as an owner
  std::optional<nlohmann::json> pod_;
  std::vector<std::string> config_maps_;  // created by this run
};

}  // namespace canhazgpu::cli::k8s
