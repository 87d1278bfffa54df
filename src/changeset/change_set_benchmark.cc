// Packaging and unpacking a vLLM-sized checkout (issue 18's goal: package
// in under 500 ms): about 3,000 files of vLLM's typical sizes, 100 of them
// changed (edits, additions, deletions, a binary file), built once with the
// `git` command.
//   build/src/changeset/changeset_benchmark
#include <benchmark/benchmark.h>

#include "changeset/bundle.h"
#include "changeset/change_set.h"
#include "changeset/testing/git_fixture.h"
#include "changeset/unpack.h"
#include "changeset/vllm_checkout.h"

namespace canhazgpu::changeset {
namespace {

using namespace testing;  // NOLINT: the fixture helpers

constexpr int kFiles = 3000;
constexpr int kChanged = 100;

std::string PythonFile(int i, int lines) {
  std::string out = "# SPDX-License-Identifier: Apache-2.0\nimport torch\n\n";
  for (int l = 0; l < lines; ++l) {
    out += "def function_" + std::to_string(i) + "_" + std::to_string(l) + "(x):\n    return x * " +
           std::to_string(l) + "\n\n";
  }
  return out;
}

struct Checkout {
  fs::path root;
  VllmCheckout checkout;
  std::string bundle;
  fs::path base;  // the merge-base, exported
};

const Checkout& TheCheckout() {
  static Checkout* c = [] {
    auto* out = new Checkout;
    out->root = fs::temp_directory_path() / ("changeset_benchmark." + std::to_string(getpid()));
    fs::remove_all(out->root);
    std::map<std::string, std::string> files;
    for (int i = 0; i < kFiles; ++i) {
      // Mostly small Python modules, some large ones, as in vLLM.
      const int lines = i % 50 == 0 ? 400 : 20 + i % 60;
      files["vllm/pkg" + std::to_string(i % 40) + "/mod" + std::to_string(i) + ".py"] =
          PythonFile(i, lines);
    }
    FakeVllm v = MakeFakeVllm(out->root, "upstream", files);
    Git(v.work, "checkout -q -b feature");
    for (int i = 0; i < kChanged; ++i) {
      const std::string path =
          "vllm/pkg" + std::to_string(i % 40) + "/mod" + std::to_string(i) + ".py";
      if (i % 10 == 0) {
        fs::remove(v.work / path);
      } else if (i % 10 == 1) {
        WriteBytes(v.work / ("vllm/new/added" + std::to_string(i) + ".py"), PythonFile(i, 30));
      } else {
        WriteBytes(v.work / path, PythonFile(i, 25) + "# edited\n");
      }
    }
    std::string binary(200 * 1024, '\0');
    for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 131 % 251);
    WriteBytes(v.work / "vllm/new/weights.bin", binary);
    Git(v.work, "add -A vllm/pkg2");
    Git(v.work, "commit -q -m 'some of it committed'");
    out->checkout = DetectVllmCheckout(v.work, false).value();
    out->bundle = Encode(CollectChangeSet(v.work, out->checkout.merge_base).value());
    out->base = out->root / "base";
    fs::create_directories(out->base);
    Shell("git -C " + Quote(v.work.string()) + " -c tar.umask=022 archive " +
          out->checkout.merge_base + " | tar -x -C " + Quote(out->base.string()));
    return out;
  }();
  return *c;
}

// What `k8shazgpu vllm package` does: detect, collect, encode.
void BM_Package(benchmark::State& state) {
  const Checkout& c = TheCheckout();
  size_t entries = 0;
  for (auto _ : state) {
    VllmCheckout checkout = DetectVllmCheckout(c.checkout.top_level, false).value();
    ChangeSet change_set = CollectChangeSet(checkout.top_level, checkout.merge_base).value();
    entries = change_set.entries.size();
    benchmark::DoNotOptimize(Encode(change_set));
  }
  state.counters["entries"] = static_cast<double>(entries);
  state.counters["bundle_bytes"] = static_cast<double>(c.bundle.size());
}
BENCHMARK(BM_Package)->Unit(benchmark::kMillisecond);

// What the init container does after exporting the merge-base: copy it
// into the workspace, check every base blob and write the changes.
void BM_Unpack(benchmark::State& state) {
  const Checkout& c = TheCheckout();
  int round = 0;
  for (auto _ : state) {
    const fs::path to = c.root / ("to" + std::to_string(round++));
    absl::Status status = Unpack(c.bundle, c.base, to);
    if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
    state.PauseTiming();
    fs::remove_all(to);
    state.ResumeTiming();
  }
}
BENCHMARK(BM_Unpack)->Unit(benchmark::kMillisecond);

// Unpacking in place (the exported base is the workspace): the checks and
// the writes without the copy.
void BM_UnpackInPlace(benchmark::State& state) {
  const Checkout& c = TheCheckout();
  const fs::path work = c.root / "in_place";
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove_all(work);
    fs::copy(c.base, work, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    state.ResumeTiming();
    absl::Status status = Unpack(c.bundle, work, work);
    if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
  }
}
BENCHMARK(BM_UnpackInPlace)->Unit(benchmark::kMillisecond);

// The same with every file fsynced, for comparison: what durability costs.
void BM_UnpackInPlaceSynced(benchmark::State& state) {
  const Checkout& c = TheCheckout();
  const fs::path work = c.root / "in_place_synced";
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove_all(work);
    fs::copy(c.base, work, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    state.ResumeTiming();
    absl::Status status = Unpack(c.bundle, work, work, UnpackOptions{.sync = true});
    if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
  }
}
BENCHMARK(BM_UnpackInPlaceSynced)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace canhazgpu::changeset

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  canhazgpu::changeset::testing::fs::remove_all(canhazgpu::changeset::TheCheckout().root);
  return 0;
}
