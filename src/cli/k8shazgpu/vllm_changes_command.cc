// `k8shazgpu vllm package` and `k8shazgpu vllm unpack`: the developer's
// local vLLM changes as a change set bundle (src/changeset), and the bundle
// applied to the merge-base - what the pod's init container runs. Neither
// touches the cluster, so neither needs a kubeconfig.
#include <unistd.h>

#include <filesystem>

#include "changeset/bundle.h"
#include "changeset/change_set.h"
#include "changeset/unpack.h"
#include "changeset/vllm_checkout.h"
#include "cli/k8shazgpu/commands.h"
#include "core/file_read.h"
#include "core/file_write.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

namespace cs = ::canhazgpu::changeset;

std::vector<FlagSpec> PackageFlags() {
  return {
      {.name = "C",
       .short_name = 'C',
       .has_value = true,
       .value_name = "DIR",
       .help = "a directory inside the vLLM checkout (default: the current one)"},
      {.name = "fetch", .help = "fetch the upstream remote before finding the merge-base"},
      {.name = "out", .has_value = true, .value_name = "FILE", .help = "where to write the bundle"},
  };
}

std::vector<FlagSpec> UnpackFlags() {
  return {
      {.name = "base",
       .has_value = true,
       .value_name = "DIR",
       .help = "the repository's files at the bundle's merge-base"},
      {.name = "to",
       .has_value = true,
       .value_name = "DIR",
       .help = "where the result goes: --base itself, or a new or empty directory"},
  };
}

absl::StatusOr<int> Package(const ParsedFlags& flags) {
  if (!flags.positional.empty()) {
    return absl::InvalidArgumentError(StrCat("unexpected argument '", flags.positional[0],
                                             "'; use: k8shazgpu vllm package ",
                                             "[-C DIR] [--fetch] --out FILE"));
  }
  const std::optional<std::string> out = flags.Value("out");
  if (!out.has_value() || out->empty()) {
    return absl::InvalidArgumentError("vllm package needs --out FILE, where the bundle goes");
  }
  const std::filesystem::path dir = flags.Value("C").value_or(".");
  ASSIGN_OR_RETURN(cs::VllmCheckout checkout, cs::DetectVllmCheckout(dir, flags.Has("fetch")));
  ASSIGN_OR_RETURN(cs::ChangeSet change_set,
                   cs::CollectChangeSet(checkout.top_level, checkout.merge_base));
  const std::string bundle = cs::Encode(change_set);
  if (absl::Status size = cs::CheckBundleSize(bundle.size(), change_set); !size.ok()) {
    // Not "GPUs unavailable" (ResourceExhausted's exit code): the change set
    // itself has to shrink.
    return absl::FailedPreconditionError(size.message());
  }
  RETURN_IF_ERROR(WriteFileAtomically(*out, bundle, 0644));

  std::string text = StrCat("vLLM checkout ", checkout.top_level.string(), " on ",
                            checkout.branch.empty() ? "a detached HEAD" : checkout.branch, " (",
                            checkout.head.substr(0, 12), "); upstream ", checkout.remote_name, " (",
                            checkout.remote_url, ")\n");
  text += cs::FormatSummary(cs::Summarize(change_set));
  const std::vector<std::string> compiled = cs::TouchesCompiledCode(change_set);
  if (!compiled.empty()) {
    text += StrCat("compiled code changed (", compiled.size(), " path",
                   compiled.size() == 1 ? "" : "s", ", e.g. ", compiled[0],
                   "): overlaying the Python package will not pick these up; rebuild vLLM\n");
  }
  const size_t parts = cs::SplitIntoParts(bundle, cs::kConfigMapPartSize).size();
  text += StrCat("wrote ", *out, ": ", cs::FormatBytes(bundle.size()), " compressed (", parts,
                 " ConfigMap part", parts == 1 ? "" : "s", ")\n");
  std::fputs(text.c_str(), stdout);
  return 0;
}

absl::StatusOr<int> Unpack(const ParsedFlags& flags) {
  if (flags.positional.size() != 1) {
    return absl::InvalidArgumentError(
        "use: k8shazgpu vllm unpack FILE --base DIR --to DIR (one bundle file)");
  }
  const std::optional<std::string> base = flags.Value("base");
  const std::optional<std::string> to = flags.Value("to");
  if (!base.has_value() || !to.has_value() || base->empty() || to->empty()) {
    return absl::InvalidArgumentError(
        "vllm unpack needs --base DIR (the merge-base's files) and --to DIR (the result)");
  }
  // A bundle over the ceiling was never packaged; a file much bigger is no
  // bundle of ours.
  ASSIGN_OR_RETURN(std::string bundle,
                   ReadRegularFile(flags.positional[0], cs::kMaxBundleSize + 4096, "bundle"));
  ASSIGN_OR_RETURN(cs::ChangeSet change_set, cs::Decode(bundle));
  RETURN_IF_ERROR(cs::Apply(change_set, *base, *to));
  const cs::Summary summary = cs::Summarize(change_set);
  std::printf("applied %zu changes onto merge-base %s in %s (%d added, %d modified, %d deleted)\n",
              change_set.entries.size(), change_set.base_commit.c_str(), to->c_str(), summary.added,
              summary.modified, summary.deleted);
  const std::vector<std::string> compiled = cs::TouchesCompiledCode(change_set);
  if (!compiled.empty()) {
    std::printf("compiled code changed (%zu path%s, e.g. %s): rebuild vLLM to use them\n",
                compiled.size(), compiled.size() == 1 ? "" : "s", compiled[0].c_str());
  }
  return 0;
}

}  // namespace

int VllmPackageCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, PackageFlags(), "vllm package",
                        [](Context&, const ParsedFlags& flags) { return Package(flags); });
}

int VllmUnpackCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, UnpackFlags(), "vllm unpack",
                        [](Context&, const ParsedFlags& flags) { return Unpack(flags); });
}

}  // namespace canhazgpu::cli::k8s
