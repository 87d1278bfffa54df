// Exporting a vLLM-sized tree (3,000 files in 150 directories, 24 MiB, a
// few executables and links) from a packed repository, as the init
// container does from the node's mirror; `git archive | tar -x` of the same
// commit for comparison (docs/perf.md).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <time.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "git/export.h"
#include "git/testing/command.h"
#include "git/testing/test_repo.h"

namespace canhazgpu {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  git::testing::ScopedTempDir temp{"export_benchmark"};
  fs::path repository;
  std::string commit;

  Fixture() {
    repository = temp.path() / "repo";
    git::testing::InitWorkTree(repository);
    uint32_t seed = 12345;
    for (int i = 0; i < 3000; ++i) {
      seed = seed * 1103515245 + 12345;
      const size_t size = 200 + (seed >> 8) % 16000;  // 200 B .. 16 KB, about 8 KB mean
      std::string text;
      text.reserve(size);
      for (size_t j = 0; text.size() < size; ++j) {
        text += "line " + std::to_string(i) + " " + std::to_string(j * seed % 9973) + "\n";
      }
      git::testing::WriteFile(
          repository / ("pkg" + std::to_string(i % 150)) / ("file" + std::to_string(i) + ".py"),
          text, /*executable=*/i % 100 == 0);
    }
    for (int i = 0; i < 10; ++i) {
      fs::create_symlink("../pkg0/file0.py", repository / ("pkg1/link" + std::to_string(i)));
    }
    commit = git::testing::CommitAll(repository, "tree");
    // A mirror's objects arrive as a pack.
    git::testing::Git(repository, {"repack", "-adq"});
    git::testing::Git(repository, {"prune"});
  }
};

// CPU seconds of this process (all threads) and of its waited-for children:
// on this shared VM wall time swings with the neighbours' load, CPU much less.
double CpuSeconds(int who) {
  rusage usage{};
  getrusage(who, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

Fixture& SharedFixture() {
  static Fixture* fixture = new Fixture();
  return *fixture;
}

void BM_ExportCommit3000Files(benchmark::State& state) {
  Fixture& fixture = SharedFixture();
  int round = 0;
  double cpu = 0;
  for (auto _ : state) {
    const fs::path dest = fixture.temp.path() / ("export" + std::to_string(round++));
    const double before = CpuSeconds(RUSAGE_SELF);
    absl::Status status = git::ExportCommit(fixture.repository, fixture.commit, dest);
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      break;
    }
    cpu += CpuSeconds(RUSAGE_SELF) - before;
    state.PauseTiming();
    fs::remove_all(dest);
    state.ResumeTiming();
  }
  state.counters["files"] = 3010;
  state.counters["cpu_ms"] =
      benchmark::Counter(cpu * 1e3 / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_ExportCommit3000Files)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GitArchiveUntar3000Files(benchmark::State& state) {
  Fixture& fixture = SharedFixture();
  int round = 0;
  double cpu = 0;
  for (auto _ : state) {
    const fs::path dest = fixture.temp.path() / ("archive" + std::to_string(round++));
    fs::create_directories(dest);
    const double before = CpuSeconds(RUSAGE_CHILDREN);
    git::testing::CommandResult result = git::testing::RunCommand(
        {"sh", "-c", "git -C \"$0\" archive --format=tar \"$1\" | tar -x -C \"$2\"",
         fixture.repository.string(), fixture.commit, dest.string()});
    if (result.exit_code != 0) {
      state.SkipWithError(result.err.c_str());
      break;
    }
    cpu += CpuSeconds(RUSAGE_CHILDREN) - before;
    state.PauseTiming();
    fs::remove_all(dest);
    state.ResumeTiming();
  }
  state.counters["cpu_ms"] =
      benchmark::Counter(cpu * 1e3 / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_GitArchiveUntar3000Files)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace canhazgpu

BENCHMARK_MAIN();
