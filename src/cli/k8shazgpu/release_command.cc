// `k8shazgpu release [NAME...]`: ends the caller's reservations NAME..., or all of
// the caller's reservations in the namespace, by deleting their pods (the
// garbage collector takes the templates and claims they own). As
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

// The caller's reservation `name`, or why it cannot be released: it does
// not exist, is a run (cleanup ends those) or someone else's.
absl::StatusOr<json> OwnReservation(kube::Client& client, const std::string& ns,
                                    const std::string& name, const std::string& me) {
  absl::StatusOr<json> pod = client.Get(kube::kPods, ns, name);
  if (kube::IsApiNotFound(pod.status())) {
    return absl::NotFoundError(StrCat("no reservation named '", name, "' in namespace ", ns,
                                      "; 'k8shazgpu status' lists who holds what"));
  }
  if (!pod.ok()) return pod.status();
  if (Label(*pod, kKindLabel) != kReservationKind) {
    if (!Label(*pod, kRunLabel).empty()) {
      return absl::InvalidArgumentError(StrCat("'", name,
                                               "' is a run, not a reservation; end it with: "
                                               "k8shazgpu cleanup -n ",
                                               ns, " --name ", name));
    }
    return absl::NotFoundError(
        StrCat("pod '", name, "' in namespace ", ns, " is not a k8shazgpu reservation"));
  }
  if (Label(*pod, kUserLabel) != me) {
    return absl::PermissionDeniedError(StrCat("reservation '", name, "' is ",
                                              Label(*pod, kUserLabel), "'s, not yours (", me,
                                              "); only its owner releases it"));
  }
  return pod;
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
  std::vector<json> pods;
  // Every name is checked before any is released: a typo releases nothing.
  for (const std::string& name : flags.positional) {
    ASSIGN_OR_RETURN(json pod, OwnReservation(client, ns, name, me));
    const bool seen = std::any_of(pods.begin(), pods.end(), [&](const json& p) {
      return p["metadata"].value("name", "") == name;
    });
    if (!seen) pods.push_back(std::move(pod));
  }
  if (flags.positional.empty()) {
    ASSIGN_OR_RETURN(
        json list, client.ListAll(kube::kPods, ns,
                                  {.label_selector = StrCat(kKindLabel, "=", kReservationKind, ",",
                                                            kUserLabel, "=", me)}));
    for (const json& pod : list["items"]) pods.push_back(pod);
  }
  if (pods.empty()) {
    std::printf("No reservations of yours in namespace %s to release\n", ns.c_str());
    return 0;
  }
  for (const json& pod : pods) {
    const std::string name = pod["metadata"].value("name", "");
    absl::Status deleted = client.Delete(kube::kPods, ns, name);
    if (!deleted.ok() && !kube::IsApiNotFound(deleted)) return deleted;
    std::printf("Released reservation %s (node %s)\n", name.c_str(),
                pod.value("/spec/nodeName"_json_pointer, std::string("none yet")).c_str());
  }
  return 0;
}

}  // namespace

std::vector<FlagSpec> ReleaseFlags() { return {}; }

int ReleaseCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, ReleaseFlags(), "release", Release);
}

}  // namespace canhazgpu::cli::k8s
