// `k8shazgpu cleanup [--name NAME | --all [--include-reservations]]
// [--all-users]`: deletes runs and everything they created, found by their
// labels (cleanup_plan.h decides what); one line per deleted object.
#include <cstdio>

#include "cli/k8shazgpu/cleanup_plan.h"
#include "cli/k8shazgpu/commands.h"
#include "cli/k8shazgpu/run_objects.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;

absl::StatusOr<std::vector<json>> Labelled(kube::Client& client, const kube::ResourceRef& ref,
                                           const std::string& ns) {
  ASSIGN_OR_RETURN(json list, client.ListAll(ref, ns, {.label_selector = kRunLabel}));
  return list["items"].get<std::vector<json>>();
}

// Asks a person at a terminal whether --all takes the reservations still
// holding GPUs too; anything but "y" (or the end of input) is no.
bool AskAboutReservations(const std::vector<std::string>& names) {
  std::fprintf(stderr, "k8shazgpu: also delete %zu running reservation(s) (%s)? [y/N] ",
               names.size(), Join(names, ", ").c_str());
  std::fflush(stderr);
  char line[64];
  if (std::fgets(line, sizeof(line), stdin) == nullptr) return false;
  return Trim(line) == "y" || Trim(line) == "yes";
}

absl::StatusOr<int> Cleanup(Context& ctx, const ParsedFlags& flags) {
  if (!flags.positional.empty() || flags.saw_separator) {
    return absl::InvalidArgumentError(StrCat("unexpected argument '",
                                             flags.positional.empty() ? "--" : flags.positional[0],
                                             "' for 'cleanup'; name a run with --name NAME"));
  }
  const bool all = flags.Has("all");
  if (all && flags.Has("name")) {
    return absl::InvalidArgumentError(
        "--name and --all cannot be used together: pick one run or all");
  }
  if (!all && !flags.Has("name")) {
    return absl::InvalidArgumentError(
        "say what to delete: cleanup --name NAME (one run) or cleanup --all (all your runs)");
  }
  RETURN_IF_ERROR(ctx.Connect());
  kube::Client& client = *ctx.client;
  const std::string& ns = ctx.namespace_name;
  ASSIGN_OR_RETURN(std::vector<json> pods, Labelled(client, kube::kPods, ns));
  ASSIGN_OR_RETURN(std::vector<json> templates,
                   Labelled(client, kube::kResourceClaimTemplates, ns));
  ASSIGN_OR_RETURN(std::vector<json> claims, Labelled(client, kube::kResourceClaims, ns));
  ASSIGN_OR_RETURN(std::vector<json> config_maps, Labelled(client, kube::kConfigMaps, ns));
  ASSIGN_OR_RETURN(std::vector<json> jobs, Labelled(client, kube::kJobs, ns));
  ASSIGN_OR_RETURN(std::vector<json> services, Labelled(client, kube::kServices, ns));
  CleanupScope scope{.name = flags.Value("name"),
                     .all_users = flags.Has("all-users"),
                     .me = UserLabelValue(ctx.user),
                     .include_reservations = flags.Has("include-reservations")};
  ASSIGN_OR_RETURN(CleanupPlan plan,
                   PlanCleanup(pods, templates, claims, scope, config_maps, jobs, services));
  if (!plan.reservations_skipped.empty() && ctx.stdin_tty && ctx.stderr_tty &&
      AskAboutReservations(plan.reservations_skipped)) {
    scope.include_reservations = true;
    ASSIGN_OR_RETURN(plan,
                     PlanCleanup(pods, templates, claims, scope, config_maps, jobs, services));
  }
  absl::Status first_error;
  for (const CleanupTarget& t : plan.targets) {
    // A Job's ranks go with it (the garbage collector), not left behind.
    absl::Status s =
        client.Delete(t.ref, ns, t.name, {.propagation = t.kind == "job" ? "Background" : ""});
    // Gone already: the garbage collector took it with its pod.
    if (kube::IsApiNotFound(s)) continue;
    if (!s.ok()) {
      std::fprintf(stderr, "k8shazgpu: could not delete %s/%s: %s\n", t.kind.c_str(),
                   t.name.c_str(), std::string(Explain(s, ctx).message()).c_str());
      if (first_error.ok()) first_error = s;
      continue;
    }
    std::printf("deleted %s/%s\n", t.kind.c_str(), t.name.c_str());
  }
  if (!plan.others_skipped.empty()) {
    std::fprintf(stderr,
                 "k8shazgpu: left %zu run(s) of other users (%s); --all-users deletes them\n",
                 plan.others_skipped.size(), Join(plan.others_skipped, ", ").c_str());
  }
  if (!plan.reservations_skipped.empty()) {
    std::fprintf(stderr,
                 "k8shazgpu: left %zu running reservation(s) (%s); --include-reservations deletes "
                 "them, or: k8shazgpu release NAME\n",
                 plan.reservations_skipped.size(), Join(plan.reservations_skipped, ", ").c_str());
  }
  if (plan.targets.empty() && plan.others_skipped.empty() && plan.reservations_skipped.empty()) {
    std::printf("No runs of yours in namespace %s\n", ns.c_str());
  }
  if (!first_error.ok()) {
    return absl::Status(first_error.code(),
                        "some objects were not deleted (above); run cleanup again");
  }
  return 0;
}

}  // namespace

std::vector<FlagSpec> CleanupFlags() {
  return {
      {.name = "name",
       .has_value = true,
       .value_name = "NAME",
       .help = "the run whose pod is NAME"},
      {.name = "all", .help = "all your runs in the namespace"},
      {.name = "all-users", .help = "other users' runs too"},
      {.name = "include-reservations",
       .help = "with --all: reservations still holding GPUs too (asked at a terminal)"},
  };
}

int CleanupCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, CleanupFlags(), "cleanup", Cleanup);
}

}  // namespace canhazgpu::cli::k8s
