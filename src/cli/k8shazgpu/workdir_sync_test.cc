// `run`'s working directory: the pod's workspace, init container and
// ConfigMaps (checked against the simulated API server's Kubernetes 1.34
// schemas), the report of what was shipped, and the refusals.
#include "cli/k8shazgpu/workdir_sync.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/escaping.h"
#include "changeset/bundle.h"
#include "cli/k8shazgpu/testing/schema_refusals.h"
#include "cli/k8shazgpu/vllm_pod.h"
#include "cli/k8shazgpu/vllm_run.h"
#include "core/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const RunNames kSyncNames{.run_id = "abcde12345",
                          .user = "alice",
                          .pod = "alice-abcde",
                          .claim = "alice-abcde-gpus-abcde"};

RunRequest SyncRequest() {
  RunRequest r;
  r.image = "python:3.12";
  r.argv = {"python3", "train.py", "--lr", "$LR"};
  return r;
}

const json* Named(const json& list, const std::string& name) {
  for (const json& item : list) {
    if (item.value("name", "") == name) return &item;
  }
  return nullptr;
}

void WriteProjectFile(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(gen());
  return out;
}

class WorkdirSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "workdir_sync_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  absl::StatusOr<Workdir> Pack(const std::vector<std::string>& args) {
    absl::StatusOr<ParsedFlags> flags = ParseFlags(args, WorkdirSyncFlags(), "run");
    if (!flags.ok()) return flags.status();
    return PackWorkdir(*flags, dir_);
  }

  fs::path dir_;
};

TEST(WorkdirPodTest, ThePodRunsInTheWorkspaceTheInitContainerFillsAndValidates) {
  PodPlan plan{.pod = PodObject(SyncRequest(), kSyncNames), .config_maps = {}};
  AddWorkdir(plan, kSyncNames, {"part zero", "part one"}, "registry.local/node:1");
  EXPECT_THAT(Refusals(plan.pod), IsEmpty()) << plan.pod.dump(2);
  const json& spec = plan.pod["spec"];

  const json& main = spec["containers"][0];
  EXPECT_EQ(main["workingDir"], "/workspace");
  const json* mount = Named(main["volumeMounts"], "workdir");
  ASSERT_NE(mount, nullptr);
  EXPECT_EQ((*mount)["mountPath"], "/workspace");
  EXPECT_FALSE(mount->contains("readOnly"));
  // The argv is the user's, untouched.
  EXPECT_EQ(main["command"], json({"python3", "train.py", "--lr", "$$LR"}));

  const json* workdir = Named(spec["volumes"], "workdir");
  ASSERT_NE(workdir, nullptr);
  EXPECT_TRUE(workdir->contains("emptyDir"));
  const json* parts = Named(spec["volumes"], "workdir-parts");
  ASSERT_NE(parts, nullptr);
  const json& sources = (*parts)["projected"]["sources"];
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_EQ(sources[1]["configMap"]["name"], "alice-abcde-workdir-1");
  EXPECT_EQ(sources[1]["configMap"]["items"][0]["path"], "part-1");

  ASSERT_EQ(spec["initContainers"].size(), 1u);
  const json& init = spec["initContainers"][0];
  EXPECT_EQ(init["image"], "registry.local/node:1");
  EXPECT_EQ(init["command"],
            json({"/usr/local/bin/k8shazgpu", "vllm", "unpack", "--parts", "/workdir-parts",
                  "--base", "/workspace", "--to", "/workspace"}));
  EXPECT_EQ(init["terminationMessagePolicy"], "FallbackToLogsOnError");
  EXPECT_NE(Named(init["volumeMounts"], "workdir"), nullptr);
  EXPECT_EQ((*Named(init["volumeMounts"], "workdir-parts"))["readOnly"], true);

  ASSERT_EQ(plan.config_maps.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const json& map = plan.config_maps[i];
    EXPECT_THAT(Refusals(map), IsEmpty()) << map.dump();
    EXPECT_EQ(map["metadata"]["name"], "alice-abcde-workdir-" + std::to_string(i));
    EXPECT_EQ(map["metadata"]["labels"], Labels(kSyncNames));
    std::string part;
    ASSERT_TRUE(absl::Base64Unescape(map["binaryData"][kChangesKey].get<std::string>(), &part));
    EXPECT_EQ(part, i == 0 ? "part zero" : "part one");
  }
}

TEST(WorkdirPodTest, NothingToShipGivesAnEmptyWorkspaceAndNoInitContainer) {
  PodPlan plan{.pod = PodObject(SyncRequest(), kSyncNames), .config_maps = {}};
  AddWorkdir(plan, kSyncNames, {}, "registry.local/node:1");
  EXPECT_THAT(Refusals(plan.pod), IsEmpty()) << plan.pod.dump(2);
  EXPECT_EQ(plan.pod["spec"]["containers"][0]["workingDir"], "/workspace");
  EXPECT_NE(Named(plan.pod["spec"]["volumes"], "workdir"), nullptr);
  EXPECT_FALSE(plan.pod["spec"].contains("initContainers"));
  EXPECT_THAT(plan.config_maps, IsEmpty());
}

TEST_F(WorkdirSyncTest, TheReportSaysWhatWasShippedLeftOutAndTheBound) {
  WriteProjectFile(dir_ / "train.py", "print('hi')\n");
  WriteProjectFile(dir_ / "data/big.bin", std::string(3000, 'b'));
  WriteProjectFile(dir_ / ".git", "gitdir: elsewhere\n");
  fs::create_symlink("/etc/passwd", dir_ / "outside");
  absl::StatusOr<Workdir> workdir = Pack({"--sync-max-file", "2k"});
  ASSERT_TRUE(workdir.ok()) << workdir.status();
  EXPECT_EQ(workdir->parts.size(), 1u);
  const std::string& report = workdir->report;
  EXPECT_THAT(report, HasSubstr("k8shazgpu: shipped " + dir_.string() +
                                " to /workspace: 1 file, 1 symlink, 23 B ("));
  EXPECT_THAT(report, HasSubstr("k8shazgpu:   left out: .git, 1 over 2.0 KiB (--sync-max-file): "
                                "data/big.bin 2.9 KiB\n"));
  EXPECT_THAT(report, HasSubstr("k8shazgpu:   biggest: train.py 12 B, outside 11 B\n"));
  EXPECT_THAT(report, HasSubstr("k8shazgpu:   symlinks out of the directory (shipped as links, not "
                                "followed): outside -> /etc/passwd\n"));
  // One short block: every line says who speaks, none is long.
  const std::string lines = report.substr(0, report.size() - 1);  // Split keeps views
  for (std::string_view line : Split(lines, '\n')) {
    EXPECT_TRUE(line.starts_with("k8shazgpu: ")) << line;
    EXPECT_LE(line.size(), 200u) << line;
  }
}

TEST_F(WorkdirSyncTest, LongListsWrapAtOneHundredColumns) {
  for (int i = 0; i < 8; ++i) {
    WriteProjectFile(dir_ / "checkpoints" / ("epoch-" + std::to_string(i) + "-of-the-run.bin"),
                     std::string(2000 + i, 'c'));
  }
  absl::StatusOr<Workdir> workdir = Pack({"--sync-max-file", "1Ki"});
  ASSERT_TRUE(workdir.ok()) << workdir.status();
  const std::string& report = workdir->report;
  EXPECT_THAT(report, HasSubstr("k8shazgpu:   left out: 8 over 1.0 KiB (--sync-max-file): "
                                "checkpoints/epoch-7-of-the-run.bin 2.0 KiB,\n"
                                "k8shazgpu:     checkpoints/epoch-6-of-the-run.bin 2.0 KiB,"));
  const size_t first_end = report.find('\n');
  const std::string rest = report.substr(first_end + 1, report.size() - first_end - 2);
  int lines = 0;
  for (std::string_view line : Split(rest, '\n')) {
    EXPECT_LE(line.size(), 100u) << line;
    ++lines;
  }
  EXPECT_EQ(lines, 5) << report;  // a name a line: two would pass 100 columns
}

TEST_F(WorkdirSyncTest, TheBundleCarriesTheFilesAndAnEmptyDirectoryShipsNoParts) {
  absl::StatusOr<Workdir> empty = Pack({});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(empty->parts, IsEmpty());
  EXPECT_THAT(empty->report, HasSubstr(": 0 files, 0 B"));

  WriteProjectFile(dir_ / "hello.txt", "hello\n");
  absl::StatusOr<Workdir> one = Pack({});
  ASSERT_TRUE(one.ok()) << one.status();
  absl::StatusOr<changeset::ChangeSet> decoded =
      changeset::Decode(changeset::JoinParts(one->parts));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->entries.size(), 1u);
  EXPECT_EQ(decoded->entries[0].path, "hello.txt");
  EXPECT_EQ(decoded->entries[0].data, "hello\n");
}

TEST_F(WorkdirSyncTest, TooBigInAllIsOneLineNamingTheBiggestAndNoSync) {
  for (int i = 0; i < 3; ++i) {
    WriteProjectFile(dir_ / ("weights-" + std::to_string(i) + ".bin"), RandomBytes(3 << 20, i));
  }
  WriteProjectFile(dir_ / "train.py", "print('hi')\n");
  absl::StatusOr<Workdir> workdir = Pack({"--sync-max-file", "4Mi"});
  EXPECT_EQ(workdir.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(workdir.status().message());
  EXPECT_THAT(message, AllOf(HasSubstr("over the 8.0 MiB a run carries in ConfigMaps"),
                             HasSubstr("biggest: weights-0.bin 3.0 MiB"), HasSubstr("--no-sync")));
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST_F(WorkdirSyncTest, ABadSizeIsRefused) {
  for (const char* bad : {"lots", "0", "-1Mi"}) {
    absl::StatusOr<Workdir> workdir = Pack({"--sync-max-file", bad});
    EXPECT_EQ(workdir.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(workdir.status().message(), HasSubstr("--sync-max-file '")) << bad;
  }
}

TEST(WorkdirSyncFlagsTest, RunTakesThemAndVllmRunDoesNot) {
  std::vector<std::string> names;
  for (const FlagSpec& f : RunCommandFlags()) names.push_back(f.name);
  EXPECT_THAT(names, AllOf(::testing::Contains("no-sync"), ::testing::Contains("sync-max-file"),
                           ::testing::Contains("gpus")));
  for (const FlagSpec& f : VllmRunFlags()) EXPECT_THAT(f.name, Not(HasSubstr("sync"))) << f.name;
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
