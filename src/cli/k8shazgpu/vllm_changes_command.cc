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
#include "git/export.h"

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
      {.name = "mirror",
       .has_value = true,
       .value_name = "DIR",
       .help = "instead of --base: a git repository (the node's mirror) holding --commit"},
      {.name = "commit",
       .has_value = true,
       .value_name = "SHA",
       .help = "with --mirror: the merge-base, exported from the mirror into --to"},
      {.name = "parts",
       .has_value = true,
       .value_name = "DIR",
       .help = "instead of FILE: the bundle as ConfigMap part files part-0, part-1, ..."},
      {.name = "to",
       .has_value = true,
       .value_name = "DIR",
       .help = "where the result goes: --base itself, or a new or empty directory"},
      {.name = "list",
       .has_value = true,
       .value_name = "FILE",
       .help = "also write the changed paths there, one per line: \"M path\" or \"D path\""},
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

constexpr char kUnpackUse[] =
    "use: k8shazgpu vllm unpack (FILE | --parts DIR) (--base DIR | --mirror DIR --commit SHA) "
    "--to DIR [--list FILE]";

// The bundle from one file, or from the part files a projected ConfigMap
// volume mounts (part-0, part-1, ... in order; the first missing one ends
// the list). A bundle over the ceiling was never packaged; a file much
// bigger is no bundle of ours.
absl::StatusOr<std::string> ReadBundle(const ParsedFlags& flags) {
  const std::optional<std::string> parts_dir = flags.Value("parts");
  if (parts_dir.has_value() == (flags.positional.size() == 1) || flags.positional.size() > 1) {
    return absl::InvalidArgumentError(
        StrCat("give the bundle as one FILE or as --parts DIR, not both; ", kUnpackUse));
  }
  if (!parts_dir.has_value()) {
    return ReadRegularFile(flags.positional[0], cs::kMaxBundleSize + 4096, "bundle");
  }
  std::vector<std::string> parts;
  size_t total = 0;
  for (size_t i = 0;; ++i) {
    const std::string path = StrCat(*parts_dir, "/part-", i);
    absl::StatusOr<std::string> part = ReadRegularFile(path, cs::kMaxBundleSize + 4096, "part");
    if (absl::IsNotFound(part.status())) break;
    if (!part.ok()) return part.status();
    total += part->size();
    if (total > cs::kMaxBundleSize + 4096) {
      return absl::InvalidArgumentError(
          StrCat("the parts in ", *parts_dir, " add up to more than a bundle can hold"));
    }
    parts.push_back(*std::move(part));
  }
  if (parts.empty()) {
    return absl::NotFoundError(StrCat("no bundle part ", *parts_dir, "/part-0"));
  }
  return cs::JoinParts(parts);
}

// Writes commit `commit` of `mirror` into `to`, missing or empty (an
// emptyDir's mount point cannot be renamed over: the export goes into a
// directory inside it and its entries are moved up).
absl::Status ExportBase(const std::filesystem::path& mirror, const std::string& commit,
                        const std::filesystem::path& to) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::exists(to, error)) return git::ExportCommit(mirror, commit, to);
  const fs::path staging = to / StrCat(".canhazgpu-export.", getpid());
  RETURN_IF_ERROR(git::ExportCommit(mirror, commit, staging));
  for (const fs::directory_entry& entry : fs::directory_iterator(staging)) {
    fs::rename(entry.path(), to / entry.path().filename(), error);
    if (error) {
      return absl::InternalError(
          StrCat("moving ", entry.path().string(), " into ", to.string(), ": ", error.message()));
    }
  }
  fs::remove(staging, error);
  return absl::OkStatus();
}

// "M path" (written: added or modified) or "D path" (deleted), a line
// each, for the pod's overlay to copy only what changed. A path with a
// newline cannot be a line; vLLM has none, and such a path is left out.
std::string ChangedPathList(const cs::ChangeSet& change_set) {
  std::string out;
  for (const cs::ChangeEntry& entry : change_set.entries) {
    if (entry.path.find('\n') != std::string::npos) continue;
    out += StrCat(entry.kind == cs::EntryKind::kDeleted ? "D " : "M ", entry.path, "\n");
  }
  return out;
}

// Empties `dir` without removing it (it may be a mount point).
void RemoveContents(const std::filesystem::path& dir) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    std::filesystem::remove_all(entry.path(), error);
  }
}

absl::StatusOr<int> Unpack(const ParsedFlags& flags) {
  const std::optional<std::string> base = flags.Value("base");
  const std::optional<std::string> mirror = flags.Value("mirror");
  const std::optional<std::string> commit = flags.Value("commit");
  const std::optional<std::string> to = flags.Value("to");
  if (!to.has_value() || to->empty() || base.has_value() == mirror.has_value() ||
      mirror.has_value() != commit.has_value() || (base.has_value() && base->empty())) {
    return absl::InvalidArgumentError(
        StrCat("vllm unpack needs --to DIR (the result) and either --base DIR (the merge-base's "
               "files) or --mirror DIR --commit SHA (a repository holding it); ",
               kUnpackUse));
  }
  ASSIGN_OR_RETURN(std::string bundle, ReadBundle(flags));
  const cs::UnpackOptions options{.sync = false};  // a pod's workspace: see unpack.h
  // Every entry but no file's contents: the files are streamed to disk.
  ASSIGN_OR_RETURN(cs::ChangeSet change_set, cs::DecodeIndex(bundle, options.limits));
  if (base.has_value()) {
    // Into another directory it is all or nothing (unpack.h); in place is
    // what the person asked for.
    RETURN_IF_ERROR(cs::UnpackIndexed(bundle, change_set, *base, *to, options));
  } else {
    if (*commit != change_set.base_commit) {
      return absl::FailedPreconditionError(StrCat("the bundle's merge-base is ",
                                                  change_set.base_commit, ", not --commit ",
                                                  *commit, "; nothing was written"));
    }
    std::error_code error;
    const bool existed = std::filesystem::exists(*to, error);
    if (existed &&
        (!std::filesystem::is_directory(*to, error) || !std::filesystem::is_empty(*to, error))) {
      return absl::FailedPreconditionError(
          StrCat(*to, " is not an empty directory; --mirror exports into a new or empty one"));
    }
    absl::Status exported = ExportBase(*mirror, *commit, *to);
    if (exported.ok()) exported = cs::UnpackIndexed(bundle, change_set, *to, *to, options);
    if (!exported.ok()) {
      // Leave --to as it was: empty, or absent. Applying in place over a
      // fresh export, then removing it on failure, costs one copy less
      // than exporting elsewhere and copying.
      if (existed) {
        RemoveContents(*to);
      } else {
        std::filesystem::remove_all(*to, error);
      }
      return exported;
    }
  }
  if (const std::optional<std::string> list = flags.Value("list")) {
    RETURN_IF_ERROR(
        WriteFileAtomically(*list, ChangedPathList(change_set), 0644, FileSync::kAtomicOnly));
  }
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
