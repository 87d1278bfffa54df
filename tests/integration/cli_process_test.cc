// Real processes and signals: a wrapper killed with SIGKILL, 16 processes
// racing for 4 GPUs, and the hardware providers driven through the binary.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "integration/cli_runner.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(CliProcessTest, KilledWrapperKeepsGpusUntilTheJobExits) {
  CliHost host;
  ASSERT_EQ(host.Run({"admin", "--provider", "fake", "--gpus", "2"}).exit_code, 0);
  std::string stop = host.dir() + "/stop";
  int wrapper = host.Spawn(
      {"run", "-g", "2", "--", "sh", "-c", "while [ ! -f " + stop + " ]; do sleep 0.02; done"});
  int job = 0;
  ASSERT_TRUE(Eventually([&] {
    json status = json::parse(host.Run({"status", "--json"}).out);
    if (status[0]["status"] != "IN_USE") return false;
    job = status[0]["pid"].get<int>();
    return true;
  }));
  EXPECT_NE(job, wrapper) << "the reservation names the job, not the wrapper";
  kill(wrapper, SIGKILL);
  waitpid(wrapper, nullptr, 0);
  // The job still runs: its GPUs stay reserved.
  json during = json::parse(host.Run({"status", "--json"}).out);
  EXPECT_EQ(during[0]["status"], "IN_USE");
  EXPECT_EQ(during[1]["status"], "IN_USE");
  EXPECT_EQ(host.Run({"reserve", "-g", "1", "--nonblock"}).exit_code, 3);
  // The job ends: the very next command sees the GPUs free.
  WriteFile(stop, "");
  ASSERT_TRUE(Eventually([&] { return ProcessGone(job); }));
  CliResult after = host.Run({"reserve", "-g", "2", "--short"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out, "0,1");
}

// 16 processes each reserve one GPU of 4, hold it, and release it, many
// times. While a worker holds GPU g it owns the marker file gpu-g, created
// with O_EXCL: a second owner of the same GPU would fail to create it.
TEST(CliProcessTest, SixteenProcessesNeverShareAGpu) {
  CliHost host;
  ASSERT_EQ(host.Run({"admin", "--provider", "fake", "--gpus", "4"}).exit_code, 0);
  constexpr int kWorkers = 16;
  constexpr int kRounds = 15;
  std::vector<pid_t> workers;
  for (int w = 0; w < kWorkers; ++w) {
    pid_t pid = fork();
    if (pid == 0) {
      int granted = 0;
      for (int round = 0; round < kRounds; ++round) {
        CliResult r = host.Run({"reserve", "-g", "1", "--short", "--nonblock"});
        if (r.exit_code == 3) continue;  // all four taken right now
        if (r.exit_code != 0) _exit(10);
        std::string marker = host.dir() + "/gpu-" + r.out;
        int fd = open(marker.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
        if (fd < 0) _exit(20);  // someone else holds "our" GPU
        close(fd);
        ++granted;
        unlink(marker.c_str());
        if (host.Run({"release", "-G", r.out}).exit_code != 0) _exit(30);
      }
      _exit(50 + granted);  // 50.. : success, with how many rounds got a GPU
    }
    workers.push_back(pid);
  }
  int granted = 0;
  for (pid_t pid : workers) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) >= 50)
        << "worker exit " << WEXITSTATUS(status) << " (20 means a GPU had two owners)";
    if (WIFEXITED(status) && WEXITSTATUS(status) >= 50) granted += WEXITSTATUS(status) - 50;
  }
  EXPECT_GT(granted, 0);
  for (const json& g : json::parse(host.Run({"status", "--json"}).out)) {
    EXPECT_EQ(g["status"], "AVAILABLE");
  }
}

TEST(CliProcessTest, NvidiaProviderThroughTheTestNvmlLibrary) {
  CliHost host;
  std::string nvml_host = host.dir() + "/nvml.json";
  WriteFile(nvml_host, R"({"gpus": [
      {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-a", "memory_total_mib": 81920},
      {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-b", "memory_total_mib": 81920}]})");
  host.env()["CANHAZGPU_NVML_LIBRARY"] = FAKE_NVML_LIBRARY;
  host.env()["FAKE_NVML_HOST"] = nvml_host;
  CliResult admin = host.Run({"admin"});
  ASSERT_EQ(admin.exit_code, 0) << admin.err;
  EXPECT_THAT(admin.out, HasSubstr("Initialized 2 GPUs (IDs 0 to 1) with provider nvidia"));
  json status = json::parse(host.Run({"status", "--json"}).out);
  EXPECT_EQ(status[1]["gpu_model"], "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(status[1]["uuid"], "GPU-b");
  // The driver disappears: status still answers, with every GPU in error.
  host.env()["CANHAZGPU_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1";
  json broken = json::parse(host.Run({"status", "--json"}).out);
  EXPECT_EQ(broken[0]["status"], "ERROR");
  EXPECT_THAT(broken[0]["error"].get<std::string>(), HasSubstr("NVIDIA driver library"));
}

// Issue 14: with the driver library gone, commands that need GPUs stop at
// once with the driver's message instead of queueing forever behind GPUs
// that are all ERROR; status names the failure once, above its table.
TEST(CliProcessTest, FailingProviderStopsRunAndReserveAtOnce) {
  CliHost host;
  std::string nvml_host = host.dir() + "/nvml.json";
  WriteFile(nvml_host, R"({"gpus": [
      {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-a", "memory_total_mib": 81920},
      {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-b", "memory_total_mib": 81920}]})");
  host.env()["CANHAZGPU_NVML_LIBRARY"] = FAKE_NVML_LIBRARY;
  host.env()["FAKE_NVML_HOST"] = nvml_host;
  ASSERT_EQ(host.Run({"admin"}).exit_code, 0);
  host.env()["CANHAZGPU_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1";
  CliResult reserve = host.Run({"reserve", "-g", "1"});
  EXPECT_EQ(reserve.exit_code, 1);
  EXPECT_THAT(reserve.err, HasSubstr("NVIDIA driver library"));
  CliResult run = host.Run({"run", "-g", "1", "--", "true"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("NVIDIA driver library"));
  CliResult table = host.Run({"status"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  size_t first = table.out.find("NVIDIA driver library");
  ASSERT_NE(first, std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("NVIDIA driver library", first + 1), std::string::npos)
      << "named once, not on every row:\n"
      << table.out;
  EXPECT_LT(first, table.out.find("ERROR")) << "above the table";
  EXPECT_TRUE(json::parse(host.Run({"status", "--json"}).out)[1].contains("error"));
}

TEST(CliProcessTest, NoGpuHostGetsAClearMessage) {
  CliHost host;
  host.env()["CANHAZGPU_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1";
  host.env()["CANHAZGPU_SYSFS_ROOT"] = "/nonexistent";
  CliResult r = host.Run({"admin"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no GPUs detected"));
  EXPECT_THAT(r.err, HasSubstr("--provider fake"));
}

TEST(CliProcessTest, AmdProviderSetsRocmVariables) {
  CliHost host;
  host.env()["CANHAZGPU_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1";
  host.env()["CANHAZGPU_SYSFS_ROOT"] = AMD_FIXTURE_ROOT;
  CliResult admin = host.Run({"admin"});
  ASSERT_EQ(admin.exit_code, 0) << admin.err;
  EXPECT_THAT(admin.out, HasSubstr("with provider amd"));
  CliResult run =
      host.Run({"run", "-G", "1", "--", "sh", "-c",
                "echo $ROCR_VISIBLE_DEVICES $HIP_VISIBLE_DEVICES $CUDA_VISIBLE_DEVICES"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "1 0 0\n");
}

}  // namespace
}  // namespace canhazgpu::testing
