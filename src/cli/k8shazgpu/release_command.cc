// `k8shazgpu release [NAME...]`: ends the caller's reservations NAME..., or all of
// the caller's reservations in the namespace, by deleting their pods - or
// a multi-node reservation's Job - (the garbage collector takes the
// templates and claims they own). As
// `canhazgpu release`: nothing to release is a line and exit 0; another
// user's reservation is refused.
#include <algorithm>
#include <cstdio>

#include "cli/k8shazgpu/commands.h"
#include "cli/k8shazgpu/run_objects.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;

std::string Label(const json& object, const std::string& key) {
  return object.value("/metadata/labels"_json_pointer, json::object()).value(key, "");
}

// What one reservation is: its pod, or a multi-node reservation's Job
// (deleting the Job deletes its ranks; a rank deleted alone would come back).
struct Held {
  kube::ResourceRef ref;
  std::string name;
  std::string where;  // "node node-0", "2 ranks"
};

Held HeldOf(const json& object) {
  const std::string name = object["metadata"].value("name", "");
  if (object.value("kind", "") == "Job") {
    return {kube::kJobs, name,
            StrCat(object.value("/spec/parallelism"_json_pointer, json(0)).dump(), " ranks")};
  }
  return {kube::kPods, name,
          StrCat("node ", object.value("/spec/nodeName"_json_pointer, std::string("none yet")))};
}

// The caller's reservation `name` (a pod, else a multi-node reservation's
// Job), or why it cannot be released: it does not exist, is a run (cleanup
// ends those) or someone else's.
absl::StatusOr<json> OwnReservation(kube::Client& client, const std::string& ns,
                                    const std::string& name, const std::string& me) {
  absl::StatusOr<json> object = client.Get(kube::kPods, ns, name);
  if (kube::IsApiNotFound(object.status())) {
    object = client.Get(kube::kJobs, ns, name);
    if (object.ok() && Label(*object, kRunLabel).empty()) object = absl::NotFoundError(name);
  }
  if (!object.ok() && (kube::IsApiNotFound(object.status()) || absl::IsNotFound(object.status()))) {
    return absl::NotFoundError(StrCat("no reservation named '", name, "' in namespace ", ns,
                                      "; 'k8shazgpu status' lists who holds what"));
  }
  if (!object.ok()) return object.status();
  if (Label(*object, kKindLabel) != kReservationKind) {
    if (!Label(*object, kRunLabel).empty()) {
      return absl::InvalidArgumentError(StrCat("'", name,
                                               "' is a run, not a reservation; end it with: "
                                               "k8shazgpu cleanup -n ",
                                               ns, " --name ", name));
    }
    return absl::NotFoundError(
        StrCat("pod '", name, "' in namespace ", ns, " is not a k8shazgpu reservation"));
  }
  if (Label(*object, kUserLabel) != me) {
    return absl::PermissionDeniedError(StrCat("reservation '", name, "' is ",
                                              Label(*object, kUserLabel), "'s, not yours (", me,
                                              "); only its owner releases it"));
  }
  return object;
}

// Whether a Job controls `pod` (a rank of a multi-node reservation).
bool JobRank(const json& pod) {
  for (const json& ref : pod.value("/metadata/ownerReferences"_json_pointer, json::array()))
    if (ref.value("kind", "") == "Job" && ref.value("controller", false)) return true;
  return false;
}

absl::StatusOr<int> Release(Context& ctx, const ParsedFlags& flags) {
  if (flags.saw_separator) {
    return absl::InvalidArgumentError(
        "unexpected argument '--' for 'release'; use: k8shazgpu release [NAME...]");
  }
  RETURN_IF_ERROR(ctx.Connect());
  kube::Client& client = *ctx.client;
  const std::string& ns = ctx.namespace_name;
  const std::string me = UserLabelValue(ctx.user);
  std::vector<Held> held;
  auto add = [&](const json& object) {
    Held h = HeldOf(object);
    const bool seen = std::any_of(held.begin(), held.end(), [&](const Held& o) {
      return o.name == h.name && o.ref.resource == h.ref.resource;
    });
    if (!seen) held.push_back(std::move(h));
  };
  // Every name is checked before any is released: a typo releases nothing.
  for (const std::string& name : flags.positional) {
    ASSIGN_OR_RETURN(json object, OwnReservation(client, ns, name, me));
    add(object);
  }
  if (flags.positional.empty()) {
    const std::string mine = StrCat(kKindLabel, "=", kReservationKind, ",", kUserLabel, "=", me);
    ASSIGN_OR_RETURN(json pods, client.ListAll(kube::kPods, ns, {.label_selector = mine}));
    for (json pod : pods["items"]) {
      if (JobRank(pod)) continue;  // released with its Job, below
      pod["kind"] = "Pod";
      add(pod);
    }
    ASSIGN_OR_RETURN(json jobs, client.ListAll(kube::kJobs, ns, {.label_selector = mine}));
    for (json job : jobs["items"]) {
      job["kind"] = "Job";
      add(job);
    }
  }
  if (held.empty()) {
    std::printf("No reservations of yours in namespace %s to release\n", ns.c_str());
    return 0;
  }
  for (const Held& h : held) {
    absl::Status deleted = client.Delete(
        h.ref, ns, h.name, {.propagation = h.ref.resource == "jobs" ? "Background" : ""});
    if (!deleted.ok() && !kube::IsApiNotFound(deleted)) return deleted;
    std::printf("Released reservation %s (%s)\n", h.name.c_str(), h.where.c_str());
  }
  return 0;
}

}  // namespace

std::vector<FlagSpec> ReleaseFlags() { return {}; }

int ReleaseCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, ReleaseFlags(), "release", Release);
}

}  // namespace canhazgpu::cli::k8s
