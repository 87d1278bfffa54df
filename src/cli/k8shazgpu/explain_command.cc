// `k8shazgpu explain POD|CLAIM [-n NS] [--json]`: why a pod or a
// ResourceClaim waits - ours or anyone's - in the detail the scheduler's
// "cannot allocate all claims" leaves out (clusterview/explain.h).
#include <cstdio>

#include "cli/k8shazgpu/cluster_read.h"
#include "cli/k8shazgpu/commands.h"
#include "clusterview/explain.h"
#include "clusterview/gang_view.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

// "pod/x", "po/x", "resourceclaim/x", "resourceclaims.resource.k8s.io/x"
// or plain "x" (a pod first, then a claim), as kubectl names objects.
struct Target {
  bool pod = true;
  bool claim = true;
  std::string name;
};

absl::StatusOr<Target> ParseTarget(const std::string& arg) {
  const size_t slash = arg.find('/');
  if (slash == std::string::npos) return Target{.name = arg};
  const std::string kind = arg.substr(0, slash);
  Target t{.pod = false, .claim = false, .name = arg.substr(slash + 1)};
  if (kind == "pod" || kind == "pods" || kind == "po") {
    t.pod = true;
  } else if (kind == "resourceclaim" || kind == "resourceclaims" ||
             kind == "resourceclaims.resource.k8s.io") {
    t.claim = true;
  } else {
    return absl::InvalidArgumentError(
        StrCat("cannot explain a '", kind, "': name a pod or a resourceclaim"));
  }
  if (t.name.empty() || t.name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(StrCat("'", arg, "' is not KIND/NAME"));
  }
  return t;
}

}  // namespace

std::vector<FlagSpec> ExplainFlags() {
  return {{.name = "json", .short_name = 'j', .help = "the explanation as JSON (also -o json)"}};
}

int ExplainCommand(Context& ctx, const Args& args) {
  return RunCommandBody(
      ctx, args, ExplainFlags(), "explain",
      [](Context& c, const ParsedFlags& flags) -> absl::StatusOr<int> {
        if (flags.positional.size() != 1) {
          return absl::InvalidArgumentError(
              "usage: k8shazgpu explain POD|CLAIM [-n NAMESPACE] [--json]");
        }
        ASSIGN_OR_RETURN(Target target, ParseTarget(flags.positional[0]));
        ASSIGN_OR_RETURN(clusterview::View view, ReadCluster(c));
        const std::string key = StrCat(c.namespace_name, "/", target.name);
        std::optional<clusterview::Diagnosis> diagnosis;
        if (auto it = view.pods.find(key); target.pod && it != view.pods.end()) {
          diagnosis = clusterview::ExplainPod(view, it->second, c.clock->Now());
        } else if (auto it = view.claims.find(key); target.claim && it != view.claims.end()) {
          diagnosis = clusterview::ExplainClaim(view, it->second, c.clock->Now());
        } else if (std::vector<nlohmann::json> ranks =
                       clusterview::PendingRanks(view, c.namespace_name, target.name);
                   target.pod && !ranks.empty()) {
          // A multi-node run, by its name: the run as one (gang_view.h).
          diagnosis = clusterview::ExplainGang(view, target.name, ranks, c.clock->Now());
        } else {
          const char* what = target.pod && target.claim ? "pod or resourceclaim"
                             : target.pod               ? "pod"
                                                        : "resourceclaim";
          return absl::NotFoundError(
              StrCat("no ", what, " '", target.name, "' in namespace ", c.namespace_name));
        }
        if (PrintDocument(c, flags, diagnosis->Json())) return 0;
        const std::string text = diagnosis->Text();
        std::fwrite(text.data(), 1, text.size(), stdout);
        if (!text.empty() && text.back() != '\n') std::fputc('\n', stdout);
        return 0;
      });
}

}  // namespace canhazgpu::cli::k8s
