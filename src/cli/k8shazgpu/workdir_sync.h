// `k8shazgpu run` takes the working directory with it (issue 33, ADR 0017):
// the directory's files (changeset::CollectDirectory - .git, ignored files
// and files over --sync-max-file left out, symlinks shipped as links)
// travel as a change set bundle in ConfigMaps, as `vllm run`'s changes do
// (vllm_pod.h); an init container of the node image unpacks them with
// `k8shazgpu vllm unpack` into an emptyDir mounted at kWorkdirMount, and
// the command runs there (workingDir). --no-sync ships nothing. `vllm
// run` keeps its own checkout handling and takes none of this.
//
// Packing runs on the command's thread before anything is created; the
// pod functions are pure and thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "changeset/directory_files.h"
#include "cli/common/flags.h"
#include "cli/k8shazgpu/context.h"
#include "cli/k8shazgpu/run_hooks.h"
#include "cli/k8shazgpu/run_request.h"

namespace canhazgpu::cli::k8s {

// Where the pod's containers see the shipped directory.
inline constexpr char kWorkdirMount[] = "/workspace";
inline constexpr char kWorkdirVolume[] = "workdir";
inline constexpr char kWorkdirContainer[] = "workdir";
// Where the init container reads the bundle's parts.
inline constexpr char kWorkdirPartsMount[] = "/workdir-parts";
inline constexpr char kWorkdirPartsVolume[] = "workdir-parts";

// --no-sync and --sync-max-file SIZE.
std::vector<FlagSpec> WorkdirSyncFlags();
// The flags of `run` itself: RunFlags() and WorkdirSyncFlags().
std::vector<FlagSpec> RunCommandFlags();

// The working directory, packed.
struct Workdir {
  std::filesystem::path dir;
  // The bundle cut into ConfigMap parts; empty when there is nothing to
  // ship (the pod still gets an empty workspace to run in).
  std::vector<std::string> parts;
  // What was shipped and left out, a few lines ending in a newline, each
  // starting with "k8shazgpu: ".
  std::string report;
};

// `dir`'s files as `flags` say (--sync-max-file), within the bundle's
// ceiling (changeset::CheckBundleSize). FailedPrecondition, in one line
// naming the biggest files and --no-sync, when they do not fit;
// InvalidArgument for a bad --sync-max-file.
absl::StatusOr<Workdir> PackWorkdir(const ParsedFlags& flags, const std::filesystem::path& dir);

// The lines of Workdir::report for `files` of `dir` packed into
// `packed_bytes`, files over `max_file_size` left out.
std::string WorkdirReport(const std::filesystem::path& dir, const changeset::DirectoryFiles& files,
                          uint64_t packed_bytes, uint64_t max_file_size);

// `plan` with the workspace: an emptyDir at kWorkdirMount as the main
// container's workingDir and, when `parts` is not empty, the ConfigMaps
// carrying them and the init container of `node_image` that unpacks them
// there.
void AddWorkdir(PodPlan& plan, const RunNames& names, const std::vector<std::string>& parts,
                const std::string& node_image);

// For `run`: unless --no-sync, packs the current directory and has
// `hooks` build the pod with it, the report printed once the pod exists.
// Nothing is created when it fails.
absl::Status ShipWorkdir(Context& ctx, const ParsedFlags& flags, const RunRequest& request,
                         RunHooks& hooks);

}  // namespace canhazgpu::cli::k8s
