// The objects `k8shazgpu run` creates, built from a RunRequest as plain
// resource.k8s.io/v1 and core/v1 JSON: the claim spec (one request "gpus",
// `exactly` a count of a DeviceClass with the flags' CEL selectors), the
// ResourceClaimTemplate (or, with --share, a named ResourceClaim), the Pod
// and the owner reference that ties the template to the Pod. Also which
// DeviceClass a request uses. Every object validates against Kubernetes
// 1.34's OpenAPI (run_objects_test.cc checks). Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/k8shazgpu/run_request.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// Labels on everything run creates: `cleanup` and `queue` find runs by them.
inline constexpr char kRunLabel[] = "canhazgpu.dev/run";
inline constexpr char kUserLabel[] = "canhazgpu.dev/user";
inline constexpr char kShareLabel[] = "canhazgpu.dev/share";
// On a shared claim: the users besides its creator who may join it,
// comma-separated, or "*" (run --share-with).
inline constexpr char kShareWithAnnotation[] = "canhazgpu.dev/share-with";
// On a `reserve` pod: kKindLabel=kReservationKind (`release` finds them).
inline constexpr char kKindLabel[] = "canhazgpu.dev/kind";
inline constexpr char kReservationKind[] = "reservation";
// On a run's pod: the user's --note, and how long after it ends a later
// command of its user deletes it (seconds; run_sweep.h).
inline constexpr char kNoteAnnotation[] = "canhazgpu.dev/note";
inline constexpr char kTtlAnnotation[] = "canhazgpu.dev/ttl-seconds-after-finished";
// The pod's claim and the claim's request are both called this.
inline constexpr char kClaimName[] = "gpus";
inline constexpr char kContainerName[] = "main";

// Our classes and NVIDIA's, as discovery prefers them.
inline constexpr char kOurGpuClass[] = "gpu.canhazgpu.dev";
inline constexpr char kOurMigClass[] = "mig.canhazgpu.dev";
inline constexpr char kNvidiaGpuClass[] = "gpu.nvidia.com";
inline constexpr char kNvidiaMigClass[] = "mig.nvidia.com";

struct ClassChoice {
  std::string name;    // the DeviceClass
  std::string driver;  // whose attribute domain the selectors use
};

// The class for `request` among `classes` (DeviceClass objects as listed):
// --class when it exists (else InvalidArgument naming the classes there are);
// otherwise ours when installed, else NVIDIA's (mig.* with --mig); none of
// them: FailedPrecondition naming what was looked for. The driver is read
// from the class's `device.driver == "..."` selector, else its name's.
absl::StatusOr<ClassChoice> ChooseClass(const std::vector<nlohmann::json>& classes,
                                        const RunRequest& request);

// The names one run uses.
struct RunNames {
  std::string run_id;  // the canhazgpu.dev/run label value
  std::string user;    // the canhazgpu.dev/user label value
  std::string pod;
  std::string claim;  // the template's name, or the shared claim's
};

// A label value for `user` (at most 63 of [A-Za-z0-9._-], alphanumeric at
// both ends), and its lower-case DNS form for names; "user" if nothing is
// left.
std::string UserLabelValue(const std::string& user);
std::string UserNamePart(const std::string& user);

// The names for a new run: `id` (the run label), the pod --name or
// "<user>-<first 5 of id>", the template "<pod>-gpus-<first 5 of id>",
// or the --share name.
RunNames MakeRunNames(const RunRequest& request, const std::string& user, const std::string& id);

// A new run id (the run label): ten characters of [a-z0-9], unique enough
// never to meet another run's.
std::string NewRunId();

// The labels on every object of one run (kRunLabel, kUserLabel).
nlohmann::json Labels(const RunNames& names);

// Kubernetes expands $(VAR) in a container's command, args and env values;
// "$$" is its escape for "$". Every '$' doubled, so the text arrives as typed.
std::string EscapeDollars(const std::string& text);

// spec of a ResourceClaim (and spec.spec of a template). -G adds a selector
// on the GPUs' `index`; --mig with N > 1 a matchAttribute constraint on
// "<driver>/parentUUID": instances of one GPU, which share its memory
// bandwidth and NVLink placement, as a multi-instance job expects.
absl::StatusOr<nlohmann::json> ClaimSpec(const RunRequest& request, const ClassChoice& klass);

nlohmann::json ClaimTemplateObject(const RunNames& names, const nlohmann::json& claim_spec);
// The --share claim, labelled with the share's name and who made it. It
// belongs to no single run: each run adds its pod as an owner (not the
// controller), and Kubernetes' garbage collector deletes an object only
// once all its owners are gone - so it lives as long as some run uses it.
nlohmann::json SharedClaimObject(const RunNames& names, const std::string& share,
                                 const nlohmann::json& claim_spec,
                                 const std::vector<std::string>& share_with = {});

// Whether `user` (a user label value) may join the shared claim `claim`:
// its creator (kUserLabel) and those its kShareWithAnnotation lists. Else
// PermissionDenied saying whose claim it is and how its creator lets
// others in.
absl::Status MayJoinSharedClaim(const nlohmann::json& claim, const std::string& user);

nlohmann::json PodObject(const RunRequest& request, const RunNames& names);

// An ownerReference to `pod` as created (its uid), not the controller.
nlohmann::json OwnerReferenceTo(const nlohmann::json& pod);

}  // namespace canhazgpu::cli::k8s
