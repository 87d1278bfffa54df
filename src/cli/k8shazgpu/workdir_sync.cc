#include "cli/k8shazgpu/workdir_sync.h"

#include <cstdio>
#include <system_error>

#include "changeset/bundle.h"
#include "cli/k8shazgpu/run_objects.h"
#include "cli/k8shazgpu/vllm_pod.h"
#include "core/quantity.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

namespace cs = ::canhazgpu::changeset;
namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kNoSyncHint[] = "pass --no-sync to ship nothing";

absl::StatusOr<uint64_t> MaxFileSize(const ParsedFlags& flags) {
  const std::optional<std::string> text = flags.Value("sync-max-file");
  if (!text.has_value()) return cs::DirectoryOptions().max_file_size;
  absl::StatusOr<int64_t> bytes = QuantityValue(*text);
  if (!bytes.ok() || *bytes <= 0) {
    return absl::InvalidArgumentError(
        StrCat("--sync-max-file '", *text, "' is not a size in bytes (e.g. 4Mi, 500Ki, 2M)"));
  }
  return static_cast<uint64_t>(*bytes);
}

std::string Plural(uint64_t n, std::string_view one, std::string_view many) {
  return StrCat(n, " ", n == 1 ? one : many);
}

// The report keeps to this many columns where the paths allow.
constexpr size_t kReportColumns = 100;
constexpr char kReportIndent[] = "k8shazgpu:     ";

std::vector<std::string> Sizes(const std::vector<cs::Contributor>& files) {
  std::vector<std::string> out;
  for (const cs::Contributor& c : files)
    out.push_back(StrCat(c.path, " ", cs::FormatBytes(c.bytes)));
  return out;
}

// `head` and then `items` separated by ", ", continued on indented lines
// past kReportColumns; ends with a newline.
std::string Wrapped(const std::string& head, const std::vector<std::string>& items) {
  std::string out;
  std::string line = head;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string item = items[i] + (i + 1 < items.size() ? "," : "");
    if (i > 0 && line.size() + 1 + item.size() > kReportColumns) {
      out += line + "\n";
      line = kReportIndent + item;
    } else {
      line += " " + item;
    }
  }
  return out + line + "\n";
}

// What was left out: "3 ignored by .gitignore", ".git", "2 over 1.0 MiB
// (--sync-max-file): a 40.0 MiB", "b 2.0 MiB"; empty when nothing was.
std::vector<std::string> LeftOut(const cs::DirectoryFiles& files, uint64_t max_file_size) {
  std::vector<std::string> what;
  if (files.ignored > 0) what.push_back(StrCat(files.ignored, " ignored by .gitignore"));
  if (files.git_dirs > 0) what.push_back(".git");
  if (files.nested_repos > 0) {
    what.push_back(Plural(files.nested_repos, "nested repository", "nested repositories"));
  }
  if (files.special > 0) what.push_back(StrCat(files.special, " not a file (socket, fifo)"));
  if (files.vanished > 0) what.push_back(StrCat(files.vanished, " removed while reading"));
  if (files.too_big > 0) {
    std::vector<std::string> sizes = Sizes(files.biggest_left_out);
    sizes[0] = StrCat(files.too_big, " over ", cs::FormatBytes(max_file_size),
                      " (--sync-max-file): ", sizes[0]);
    what.insert(what.end(), sizes.begin(), sizes.end());
  }
  return what;
}

// "imagenet -> /datasets/imagenet", the first few.
std::vector<std::string> OutwardLinks(const cs::DirectoryFiles& files) {
  std::vector<std::string> out;
  for (const cs::ChangeEntry& e : files.change_set.entries) {
    if (out.size() == 3) break;
    for (const std::string& path : files.outward_links) {
      if (path == e.path) out.push_back(StrCat(e.path, " -> ", e.data));
    }
  }
  if (files.outward_links.size() > out.size()) {
    out.push_back(StrCat("and ", files.outward_links.size() - out.size(), " more"));
  }
  return out;
}

// The init container: the node image's CLI unpacks the bundle into the
// empty workspace (the base is the empty directory itself). Its log - the
// rejected paths - becomes the pod's termination message when it fails.
json UnpackContainer(const std::string& node_image) {
  return {{"name", kWorkdirContainer},
          {"image", node_image},
          {"command",
           {"/usr/local/bin/k8shazgpu", "vllm", "unpack", "--parts", kWorkdirPartsMount, "--base",
            kWorkdirMount, "--to", kWorkdirMount}},
          {"terminationMessagePolicy", "FallbackToLogsOnError"},
          {"volumeMounts",
           {{{"name", kWorkdirPartsVolume}, {"mountPath", kWorkdirPartsMount}, {"readOnly", true}},
            {{"name", kWorkdirVolume}, {"mountPath", kWorkdirMount}}}}};
}

}  // namespace

std::vector<FlagSpec> WorkdirSyncFlags() {
  return {
      {.name = "no-sync",
       .help = "do not ship the working directory; the command runs in the image's own"},
      {.name = "sync-max-file",
       .has_value = true,
       .value_name = "SIZE",
       .help = "ship files up to this size (default 1Mi); bigger ones are left out and listed"},
  };
}

std::vector<FlagSpec> RunCommandFlags() {
  std::vector<FlagSpec> flags = RunFlags();
  for (FlagSpec& f : WorkdirSyncFlags()) flags.push_back(std::move(f));
  return flags;
}

std::string WorkdirReport(const fs::path& dir, const cs::DirectoryFiles& files,
                          uint64_t packed_bytes, uint64_t max_file_size) {
  const cs::Summary summary = cs::Summarize(files.change_set);
  const int regular = summary.added - summary.symlinks;
  std::string where = dir.string();
  if (!files.git_top.empty() && files.git_top != dir) {
    where += StrCat(" (in the git work tree ", files.git_top.string(), ")");
  }
  std::string out = StrCat("k8shazgpu: shipped ", where, " to ", kWorkdirMount, ": ",
                           Plural(regular, "file", "files"));
  if (summary.symlinks > 0) out += StrCat(", ", Plural(summary.symlinks, "symlink", "symlinks"));
  out += StrCat(", ", cs::FormatBytes(summary.bytes), " (", cs::FormatBytes(packed_bytes),
                " packed)\n");
  if (const std::vector<std::string> left = LeftOut(files, max_file_size); !left.empty()) {
    out += Wrapped("k8shazgpu:   left out:", left);
  }
  if (!summary.biggest.empty()) out += Wrapped("k8shazgpu:   biggest:", Sizes(summary.biggest));
  if (!files.outward_links.empty()) {
    out += Wrapped("k8shazgpu:   symlinks out of the directory (shipped as links, not followed):",
                   OutwardLinks(files));
  }
  for (const std::string& note : summary.notes) out += StrCat("k8shazgpu:   note: ", note, "\n");
  return out;
}

absl::StatusOr<Workdir> PackWorkdir(const ParsedFlags& flags, const fs::path& dir) {
  ASSIGN_OR_RETURN(const uint64_t max_file_size, MaxFileSize(flags));
  absl::StatusOr<cs::DirectoryFiles> files =
      cs::CollectDirectory(dir, {.max_file_size = max_file_size});
  if (!files.ok()) {
    return absl::FailedPreconditionError(
        StrCat("cannot ship the working directory: ", files.status().message(), "; ", kNoSyncHint));
  }
  const std::string bundle = cs::Encode(files->change_set);
  if (!cs::CheckBundleSize(bundle.size(), files->change_set).ok()) {
    return absl::FailedPreconditionError(
        StrCat(dir.string(), " is ", cs::FormatBytes(bundle.size()), " packed, over the ",
               cs::FormatBytes(cs::kMaxBundleSize), " a run carries in ConfigMaps; biggest: ",
               Join(Sizes(cs::Summarize(files->change_set).biggest), ", "),
               "; add them to .gitignore, lower --sync-max-file, or ", kNoSyncHint));
  }
  Workdir out{
      .dir = dir, .parts = {}, .report = WorkdirReport(dir, *files, bundle.size(), max_file_size)};
  if (!files->change_set.entries.empty()) {
    out.parts = cs::SplitIntoParts(bundle, cs::kConfigMapPartSize);
  }
  return out;
}

void AddWorkdir(PodPlan& plan, const RunNames& names, const std::vector<std::string>& parts,
                const std::string& node_image) {
  json& spec = plan.pod["spec"];
  if (!spec.contains("volumes")) spec["volumes"] = json::array();
  spec["volumes"].push_back({{"name", kWorkdirVolume}, {"emptyDir", json::object()}});
  json& main = spec["containers"][0];
  if (!main.contains("volumeMounts")) main["volumeMounts"] = json::array();
  main["volumeMounts"].push_back({{"name", kWorkdirVolume}, {"mountPath", kWorkdirMount}});
  main["workingDir"] = kWorkdirMount;
  if (parts.empty()) return;
  std::vector<std::string> map_names;
  for (size_t i = 0; i < parts.size(); ++i) {
    map_names.push_back(StrCat(names.pod, "-workdir-", i));
    plan.config_maps.push_back(ChangesConfigMap(names, map_names.back(), parts[i]));
  }
  spec["volumes"].push_back(ChangesVolume(kWorkdirPartsVolume, map_names));
  if (!spec.contains("initContainers")) spec["initContainers"] = json::array();
  spec["initContainers"].push_back(UnpackContainer(node_image));
}

absl::Status ShipWorkdir(Context& ctx, const ParsedFlags& flags, const RunRequest& request,
                         RunHooks& hooks) {
  if (flags.Has("no-sync")) {
    if (flags.Has("sync-max-file")) {
      return absl::InvalidArgumentError(
          "--sync-max-file sizes what is shipped and --no-sync ships nothing; drop one");
    }
    return absl::OkStatus();
  }
  std::error_code error;
  const fs::path dir = fs::current_path(error);
  if (error) {
    return absl::FailedPreconditionError(
        StrCat("cannot read the working directory (", error.message(), "); ", kNoSyncHint));
  }
  ASSIGN_OR_RETURN(Workdir workdir, PackWorkdir(flags, dir));
  const std::string node_image = ctx.Env("K8SHAZGPU_NODE_IMAGE", kDefaultNodeImage);
  hooks.build_pod = [&request, workdir = std::move(workdir),
                     node_image](const RunNames& names) -> absl::StatusOr<PodPlan> {
    PodPlan plan{
        .pod = PodObject(request, names), .config_maps = {}, .created_note = workdir.report};
    AddWorkdir(plan, names, workdir.parts, node_image);
    return plan;
  };
  return absl::OkStatus();
}

}  // namespace canhazgpu::cli::k8s
