// `k8shazgpu release [NAME]`: ends the caller's reservation NAME, or all of
// the caller's reservations in the namespace, by deleting their pods (the
// garbage collector takes the templates and claims they own). As
// `canhazgpu release`: nothing to release is a line and exit 0; another
// user's reservation is refused.
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

absl::StatusOr<int> Release(Context& ctx, const ParsedFlags& flags) {
  if (flags.positional.size() > 1 || flags.saw_separator) {
    return absl::InvalidArgumentError(StrCat("unexpected argument '",
                                             flags.saw_separator ? "--" : flags.positional[1],
                                             "' for 'release'; use: k8shazgpu release [NAME]"));
  }
  RETURN_IF_ERROR(ctx.Connect());
  kube::Client& client = *ctx.client;
  const std::string& ns = ctx.namespace_name;
  const std::string me = UserLabelValue(ctx.user);
  std::vector<json> pods;
  if (!flags.positional.empty()) {
    const std::string& name = flags.positional[0];
    absl::StatusOr<json> pod = client.Get(kube::kPods, ns, name);
    if (kube::IsApiNotFound(pod.status()) ||
        (pod.ok() && Label(*pod, kKindLabel) != kReservationKind)) {
      return absl::NotFoundError(StrCat("no reservation named '", name, "' in namespace ", ns,
                                        "; 'k8shazgpu status' lists who holds what"));
    }
    if (!pod.ok()) return pod.status();
    if (Label(*pod, kUserLabel) != me) {
      return absl::PermissionDeniedError(StrCat("reservation '", name, "' is ",
                                                Label(*pod, kUserLabel), "'s, not yours (", me,
                                                "); only its owner releases it"));
    }
    pods.push_back(*pod);
  } else {
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
