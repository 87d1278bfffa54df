// `canhazgpu run --gpu-mem` enforcing its share on a simulated host
// (docs/sharing.md, "On a host"): the stand-in nvidia-cuda-mps-control
// (tests/fake_mps) as the host driver's MPS, one daemon per (GPU, user),
// started for the first share and stopped after the last, also after a
// SIGKILLed wrapper; and dmem.max in the job's cgroup below the admin's
// dmem parent, on a cgroup tree of plain directories that the LD_PRELOAD
// stand-in (tests/fake_cgroupfs) makes behave as cgroupfs in mkdir and rmdir.
// The simulated GPUs have 81559 MiB: 81047 MiB to share.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "integration/cli_runner.h"
#include "integration/multi_user.h"

namespace canhazgpu::testing {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kGpu0[] = "GPU-fa4e0000-0000-4000-8000-000000000000";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The value of NAME in `env` output ("NAME=VALUE" lines); "" when absent.
std::string EnvValue(const std::string& env, const std::string& name) {
  for (const std::string& line : Lines(env)) {
    if (line.rfind(name + "=", 0) == 0) return line.substr(name.size() + 1);
  }
  return "";
}

int PidFrom(const std::string& path) {
  std::string text = ReadFile(path);
  return text.empty() ? 0 : std::atoi(text.c_str());
}

class CliShareIsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/chgXXXXXX";  // short: MPS puts unix sockets below it
    ASSERT_NE(mkdtemp(dir), nullptr);
    mps_dir_ = dir;
    record_ = host_.dir() + "/mps-record";
    host_.env()["CANHAZGPU_DRIVER_ROOT"] = FAKE_MPS_DRIVER_ROOT;
    host_.env()["CANHAZGPU_MPS_DIR"] = mps_dir_;
    host_.env()["FAKE_MPS_RECORD"] = record_;
    CliResult admin = host_.Run({"admin", "--provider", "fake", "--gpus", "1"});
    ASSERT_EQ(admin.exit_code, 0) << admin.err;
  }
  void TearDown() override {
    // Whatever a test did, no daemon outlives it.
    std::error_code ec;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(mps_dir_, ec)) {
      if (entry.path().filename() == "nvidia-cuda-mps-control.pid") {
        if (int pid = PidFrom(entry.path().string()); pid > 1) kill(pid, SIGKILL);
      }
    }
    std::filesystem::remove_all(mps_dir_);
  }

  std::string UserDir() const { return mps_dir_ + "/canhazgpu-mps-" + std::to_string(geteuid()); }
  std::string GpuDir() const { return UserDir() + "/" + kGpu0; }
  std::string PidFile() const { return GpuDir() + "/pipe/nvidia-cuda-mps-control.pid"; }
  // The stand-in's record lines of the GPU's daemons, without the prefix of
  // GPU and pid.
  std::vector<std::string> Recorded() const {
    std::vector<std::string> events;
    for (const std::string& line : Lines(ReadFile(record_))) {
      if (line.rfind(std::string(kGpu0) + " ", 0) != 0) continue;
      std::string rest = line.substr(sizeof(kGpu0));
      events.push_back(rest.substr(rest.find(' ') + 1));
    }
    return events;
  }
  size_t Starts() const {
    std::vector<std::string> events = Recorded();
    return static_cast<size_t>(std::count(events.begin(), events.end(), "start"));
  }
  // Starts a `run --gpu-mem` whose job writes its environment (and its pid
  // as JOB_PID) to `name`.env, then waits for `name`.stop.
  int SpawnHeldRun(const std::string& name, const std::string& memory = "10Gi") {
    const std::string base = host_.dir() + "/" + name;
    return host_.Spawn({"run", "--gpu-mem", memory, "--", "sh", "-c",
                        "{ env; echo JOB_PID=$$; } > " + base + ".tmp && mv " + base + ".tmp " +
                            base + ".env; while [ ! -f " + base + ".stop ]; do sleep 0.02; done"},
                       {.stderr_path = base + ".err"});
  }
  std::string WaitForEnv(const std::string& name) {
    const std::string path = host_.dir() + "/" + name + ".env";
    EXPECT_TRUE(Eventually([&] { return std::filesystem::exists(path); })) << name;
    return ReadFile(path);
  }
  void Stop(const std::string& name) { WriteFile(host_.dir() + "/" + name + ".stop", ""); }
  json Status() { return json::parse(host_.Run({"status", "--json"}).out); }

  CliHost host_;
  std::string mps_dir_;
  std::string record_;
};

TEST_F(CliShareIsolationTest, RunGetsTheMpsEnvironmentAndTheDaemonItsLimit) {
  CliResult run = host_.Run({"run", "--gpu-mem", "10Gi", "--", "env"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("canhazgpu: memory isolation: mps (each process limited to 10Gi "
                                 "of GPU 0 by MPS; see docs/sharing.md)\n"));
  EXPECT_EQ(EnvValue(run.out, "CUDA_MPS_PIPE_DIRECTORY"), GpuDir() + "/pipe");
  EXPECT_EQ(EnvValue(run.out, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), std::string(kGpu0) + "=10240M");
  // 10240 of 81047 MiB: 12.6 %, rounded up.
  EXPECT_EQ(EnvValue(run.out, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "13");
  EXPECT_EQ(EnvValue(run.out, "CANHAZGPU_MEMORY_ISOLATION"), "mps");
  EXPECT_EQ(EnvValue(run.out, "CANHAZGPU_GPU_MEM"), std::to_string(10240ull << 20));
  EXPECT_EQ(EnvValue(run.out, "CANHAZGPU_GPU_MEM_TOTAL"), std::to_string(81559ull << 20));
  EXPECT_EQ(EnvValue(run.out, "CUDA_VISIBLE_DEVICES"), "0");
  // The daemon ran for the GPU alone, was told the GPU's shareable memory
  // as its default (a client can only lower it), and quit after the job.
  std::vector<std::string> events = Recorded();
  EXPECT_THAT(events, ::testing::Contains("start"));
  EXPECT_THAT(events, ::testing::Contains(std::string("env CUDA_VISIBLE_DEVICES=") + kGpu0));
  EXPECT_THAT(events, ::testing::Contains("command set_default_device_pinned_mem_limit 0 81047M"));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "command quit");
  EXPECT_FALSE(std::filesystem::exists(GpuDir())) << "nothing left of the daemon";
  struct stat st;
  ASSERT_EQ(lstat(UserDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "the user's MPS directory is private";
}

TEST_F(CliShareIsolationTest, TwoRunsOfOneUserShareOneDaemonThatStopsAfterTheLast) {
  int first = SpawnHeldRun("a", "10Gi");
  std::string a = WaitForEnv("a");
  int second = SpawnHeldRun("b", "20Gi");
  std::string b = WaitForEnv("b");
  EXPECT_EQ(EnvValue(a, "CUDA_MPS_PIPE_DIRECTORY"), EnvValue(b, "CUDA_MPS_PIPE_DIRECTORY"));
  EXPECT_EQ(EnvValue(a, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), std::string(kGpu0) + "=10240M");
  EXPECT_EQ(EnvValue(b, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), std::string(kGpu0) + "=20480M");
  EXPECT_EQ(Starts(), 1u) << "one daemon for both";
  const int daemon = PidFrom(PidFile());
  ASSERT_GT(daemon, 1);

  Stop("a");
  EXPECT_EQ(ExitCodeOf(first), 0);
  EXPECT_FALSE(ProcessGone(daemon)) << "the second share still uses it";
  Stop("b");
  EXPECT_EQ(ExitCodeOf(second), 0);
  EXPECT_TRUE(Eventually([&] { return ProcessGone(daemon); }));
  EXPECT_FALSE(std::filesystem::exists(GpuDir()));
  EXPECT_EQ(Starts(), 1u);
}

// Crash safety: a SIGKILLed wrapper leaves its daemon serving the job that
// still runs; once the job is gone, the user's next command stops it.
TEST_F(CliShareIsolationTest, AKilledWrappersDaemonIsStoppedByALaterCommandOnceTheJobIsGone) {
  int wrapper = SpawnHeldRun("k");
  const int job = std::atoi(EnvValue(WaitForEnv("k"), "JOB_PID").c_str());
  ASSERT_GT(job, 1);
  const int daemon = PidFrom(PidFile());
  ASSERT_GT(daemon, 1);
  kill(wrapper, SIGKILL);
  ExitCodeOf(wrapper);
  CliResult status = host_.Run({"status"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_FALSE(ProcessGone(daemon)) << "the job still runs: its daemon stays";

  Stop("k");
  ASSERT_TRUE(Eventually([&] { return ProcessGone(job); }));
  EXPECT_FALSE(ProcessGone(daemon)) << "nothing has looked yet";
  CliResult release = host_.Run({"release"});
  ASSERT_EQ(release.exit_code, 0) << release.err;
  EXPECT_TRUE(Eventually([&] { return ProcessGone(daemon); }));
  EXPECT_FALSE(std::filesystem::exists(GpuDir()));
  EXPECT_EQ(Recorded().back(), "command quit");
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

TEST_F(CliShareIsolationTest, NoneWhereTheControlProgramIsAbsentOrTheAdminSaysSo) {
  host_.env()["CANHAZGPU_DRIVER_ROOT"] = host_.dir() + "/no-driver";
  CliResult run = host_.Run({"run", "--gpu-mem", "1Gi", "--", "env"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("memory isolation: none (the share is booked, not enforced; no " +
                                 host_.dir() + "/no-driver/usr/bin/nvidia-cuda-mps-control"));
  EXPECT_EQ(EnvValue(run.out, "CANHAZGPU_MEMORY_ISOLATION"), "none");
  EXPECT_THAT(run.out, Not(HasSubstr("CUDA_MPS_")));

  host_.env()["CANHAZGPU_DRIVER_ROOT"] = FAKE_MPS_DRIVER_ROOT;
  host_.env()["CANHAZGPU_SHARE_ISOLATION"] = "none";
  run = host_.Run({"run", "--gpu-mem", "1Gi", "--", "env"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("memory isolation: none (the share is booked, not enforced; "
                                 "share-isolation is none here"));
  EXPECT_THAT(run.out, Not(HasSubstr("CUDA_MPS_")));
  EXPECT_EQ(ReadFile(record_), "") << "no daemon was started";
  EXPECT_FALSE(std::filesystem::exists(UserDir()));
}

TEST_F(CliShareIsolationTest, ADaemonThatWillNotStartKeepsTheJobFromRunning) {
  host_.env()["FAKE_MPS_FAIL_START"] = "no GPU for MPS";
  const std::string ran = host_.dir() + "/ran";
  CliResult run = host_.Run({"run", "--gpu-mem", "1Gi", "--", "touch", ran});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.err, HasSubstr("canhazgpu: the share is not started: gpu " + std::string(kGpu0)));
  EXPECT_THAT(run.err, HasSubstr("no GPU for MPS"));
  EXPECT_FALSE(std::filesystem::exists(ran)) << "the job must not run with less isolation";
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

TEST_F(CliShareIsolationTest, ARelativePathSettingIsAOneLineError) {
  host_.env()["CANHAZGPU_DRIVER_ROOT"] = "usr/local/nvidia";
  CliResult run = host_.Run({"run", "--gpu-mem", "1Gi", "--", "true"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_EQ(run.err,
            "canhazgpu: the setting driver-root must be an absolute path, not "
            "'usr/local/nvidia'\n");
  host_.env()["CANHAZGPU_DRIVER_ROOT"] = FAKE_MPS_DRIVER_ROOT;
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE") << "nothing was reserved";
}

TEST_F(CliShareIsolationTest, AReservationIsBookedAndSaysHowToGetMps) {
  CliResult reserve = host_.Run({"reserve", "--gpu-mem", "10Gi"});
  ASSERT_EQ(reserve.exit_code, 0) << reserve.err;
  EXPECT_THAT(reserve.out,
              HasSubstr("(shared; memory isolation: none, the share is booked, not enforced; for "
                        "MPS limits run the job with canhazgpu run --gpu-mem)"));
  EXPECT_FALSE(std::filesystem::exists(UserDir())) << "no daemon for a reservation";
}

// Two users on one GPU: a daemon each (a control daemon serves one user at
// a time, and an unprivileged user's daemon serves nobody else), each in a
// private directory of its user's.
class CliShareTwoUsersTest : public MultiUserTest {
 protected:
  void SetUp() override {
    MultiUserTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    char dir[] = "/tmp/chgXXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    mps_dir_ = dir;
    chmod(mps_dir_.c_str(), 01777);  // as /tmp
    // The stand-in where the test users reach it (the build tree may not be).
    const std::string bin = host_.dir() + "/driver/usr/bin";
    std::filesystem::create_directories(bin);
    std::filesystem::copy_file(
        std::string(FAKE_MPS_DRIVER_ROOT) + "/usr/bin/nvidia-cuda-mps-control",
        bin + "/nvidia-cuda-mps-control");
    chmod((bin + "/nvidia-cuda-mps-control").c_str(), 0755);
    for (std::string d = bin; d != host_.dir(); d = d.substr(0, d.rfind('/'))) {
      chmod(d.c_str(), 0755);
    }
    jobs_ = host_.dir() + "/jobs";
    std::filesystem::create_directory(jobs_);
    chmod(jobs_.c_str(), 01777);
    host_.env()["CANHAZGPU_DRIVER_ROOT"] = host_.dir() + "/driver";
    host_.env()["CANHAZGPU_MPS_DIR"] = mps_dir_;
    CliResult admin = AsRoot({"admin", "--provider", "fake", "--gpus", "1"});
    ASSERT_EQ(admin.exit_code, 0) << admin.err;
  }
  void TearDown() override {
    if (mps_dir_.empty()) return;
    std::error_code ec;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(mps_dir_, ec)) {
      if (entry.path().filename() == "nvidia-cuda-mps-control.pid") {
        if (int pid = PidFrom(entry.path().string()); pid > 1) kill(pid, SIGKILL);
      }
    }
    std::filesystem::remove_all(mps_dir_);
  }
  int SpawnHeld(const TestUser& user) {
    const std::string base = jobs_ + "/" + user.name;
    return SpawnAs(host_, user,
                   {"run", "--gpu-mem", "10Gi", "--", "sh", "-c",
                    "env > " + base + ".tmp && mv " + base + ".tmp " + base +
                        ".env; while [ ! -f " + base + ".stop ]; do sleep 0.02; done"});
  }
  std::string PipeDir(const TestUser& user) const {
    return mps_dir_ + "/canhazgpu-mps-" + std::to_string(user.uid) + "/" + kGpu0 + "/pipe";
  }
  uid_t OwnerOf(const std::string& path) const {
    struct stat st;
    return stat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
  }

  std::string mps_dir_;
  std::string jobs_;
};

TEST_F(CliShareTwoUsersTest, EachUserGetsADaemonOfTheirOwnInAPrivateDirectory) {
  int alice = SpawnHeld(alice_);
  int bob = SpawnHeld(bob_);
  const std::string alice_env = jobs_ + "/" + alice_.name + ".env";
  const std::string bob_env = jobs_ + "/" + bob_.name + ".env";
  ASSERT_TRUE(Eventually(
      [&] { return std::filesystem::exists(alice_env) && std::filesystem::exists(bob_env); }));
  EXPECT_EQ(EnvValue(ReadFile(alice_env), "CUDA_MPS_PIPE_DIRECTORY"), PipeDir(alice_));
  EXPECT_EQ(EnvValue(ReadFile(bob_env), "CUDA_MPS_PIPE_DIRECTORY"), PipeDir(bob_));
  const std::string alice_dir = mps_dir_ + "/canhazgpu-mps-" + std::to_string(alice_.uid);
  struct stat st;
  ASSERT_EQ(lstat(alice_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, alice_.uid);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const int alice_daemon = PidFrom(PipeDir(alice_) + "/nvidia-cuda-mps-control.pid");
  const int bob_daemon = PidFrom(PipeDir(bob_) + "/nvidia-cuda-mps-control.pid");
  ASSERT_GT(alice_daemon, 1);
  ASSERT_GT(bob_daemon, 1);
  EXPECT_NE(alice_daemon, bob_daemon);
  EXPECT_EQ(OwnerOf("/proc/" + std::to_string(alice_daemon)), alice_.uid);
  EXPECT_EQ(OwnerOf("/proc/" + std::to_string(bob_daemon)), bob_.uid);

  WriteFile(jobs_ + "/" + alice_.name + ".stop", "");
  EXPECT_EQ(ExitCodeOf(alice), 0);
  EXPECT_TRUE(Eventually([&] { return ProcessGone(alice_daemon); }));
  EXPECT_FALSE(ProcessGone(bob_daemon)) << "bob's job still runs";
  WriteFile(jobs_ + "/" + bob_.name + ".stop", "");
  EXPECT_EQ(ExitCodeOf(bob), 0);
  EXPECT_TRUE(Eventually([&] { return ProcessGone(bob_daemon); }));
}

// dmem: the admin's parent cgroup hands dmem to its children; the job's
// cgroup is made there with the share as dmem.max, and removed after.
class CliShareDmemTest : public CliShareIsolationTest {
 protected:
  void SetUp() override {
    CliShareIsolationTest::SetUp();
    if (HasFatalFailure()) return;
    root_ = host_.dir() + "/cgroup";
    parent_ = root_ + "/user-" + std::to_string(geteuid());
    std::filesystem::create_directories(parent_);
    WriteFile(root_ + "/cgroup.controllers", "cpu memory dmem\n");
    WriteFile(root_ + "/dmem.capacity", "nvidia/0000:01:00.0/vidmem 85520809984\n");
    WriteFile(parent_ + "/cgroup.subtree_control", "dmem\n");
    json host = json::parse(ReadFile(host_.fake_host()));
    host["cuda_driver_version"] = "13.4";  // MPS v3 memory partitioning
    WriteFile(host_.fake_host(), host.dump());
    host_.env()["CANHAZGPU_CGROUP_ROOT"] = root_;
    host_.env()["CANHAZGPU_DMEM_CGROUP"] = root_ + "/user-%u";  // each user's own
    host_.env()["LD_PRELOAD"] = FAKE_CGROUPFS_LIBRARY;
    host_.env()["FAKE_CGROUPFS_ROOT"] = root_;
    // A sanitizer build's runtime wants to come first; the stand-in does.
    const char* asan = std::getenv("ASAN_OPTIONS");
    host_.env()["ASAN_OPTIONS"] =
        std::string(asan != nullptr ? asan : "") + ":verify_asan_link_order=0";
  }
  std::vector<std::string> JobCgroups() const {
    std::vector<std::string> dirs;
    for (const auto& entry : std::filesystem::directory_iterator(parent_)) {
      if (entry.is_directory()) dirs.push_back(entry.path().filename().string());
    }
    return dirs;
  }

  std::string root_;
  std::string parent_;
};

TEST_F(CliShareDmemTest, TheJobsCgroupGetsTheShareAsDmemMaxAndGoesWithTheJob) {
  // What a wrapper killed earlier left, its job long gone: swept.
  const std::string leftover = parent_ + "/canhazgpu-job-999999-1";
  std::filesystem::create_directory(leftover);
  WriteFile(leftover + "/cgroup.procs", "");
  int wrapper = SpawnHeldRun("d");
  std::string env = WaitForEnv("d");
  EXPECT_EQ(EnvValue(env, "CANHAZGPU_MEMORY_ISOLATION"), "mps-dmem");
  EXPECT_EQ(EnvValue(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), std::string(kGpu0) + "=10240M");
  EXPECT_FALSE(std::filesystem::exists(leftover)) << "the leftover was swept";
  std::vector<std::string> cgroups = JobCgroups();
  ASSERT_EQ(cgroups.size(), 1u);
  const std::string cgroup = parent_ + "/" + cgroups[0];
  EXPECT_EQ(ReadFile(cgroup + "/dmem.max"), "nvidia/0000:01:00.0/vidmem 10737418240\n");
  EXPECT_EQ(ReadFile(cgroup + "/cgroup.procs"), EnvValue(env, "JOB_PID"))
      << "the job was put there before it ran";
  EXPECT_EQ(Status()[0]["shares"][0]["cgroup"], cgroup);

  Stop("d");
  EXPECT_EQ(ExitCodeOf(wrapper), 0);
  EXPECT_THAT(ReadFile(host_.dir() + "/d.err"),
              HasSubstr("memory isolation: mps-dmem (the job's cgroup limited to 10Gi of GPU 0 by "
                        "the kernel's dmem.max, each process by MPS; see docs/sharing.md)"));
  EXPECT_TRUE(JobCgroups().empty()) << "the cgroup went with the job";
  EXPECT_FALSE(std::filesystem::exists(GpuDir())) << "and the daemon";
}

TEST_F(CliShareDmemTest, AParentWithoutDmemGivesMpsAndSaysWhy) {
  WriteFile(parent_ + "/cgroup.subtree_control", "memory\n");
  CliResult run = host_.Run({"run", "--gpu-mem", "1Gi", "--", "env"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("memory isolation: mps (each process limited to 1Gi of GPU 0 by "
                                 "MPS; no dmem: dmem is not in " +
                                 parent_ + "/cgroup.subtree_control; see docs/sharing.md)"));
  EXPECT_EQ(EnvValue(run.out, "CANHAZGPU_MEMORY_ISOLATION"), "mps");
  EXPECT_TRUE(JobCgroups().empty()) << "the job was not put below the dmem parent";
}

TEST_F(CliShareDmemTest, ALimitThatCannotBeWrittenKeepsTheJobFromRunning) {
  host_.env()["FAKE_CGROUPFS_NO_DMEM_MAX"] = "1";
  const std::string ran = host_.dir() + "/ran";
  CliResult run = host_.Run({"run", "--gpu-mem", "1Gi", "--", "touch", ran});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.err, HasSubstr("the share is not started: gpu " + std::string(kGpu0)));
  EXPECT_THAT(run.err, HasSubstr("dmem.max does not exist"));
  EXPECT_EQ(LineCount(run.err), 2u) << run.err;  // "reserved ...", then the error
  EXPECT_FALSE(std::filesystem::exists(ran));
  EXPECT_TRUE(JobCgroups().empty());
  EXPECT_FALSE(std::filesystem::exists(GpuDir())) << "the daemon it started is stopped";
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

}  // namespace
}  // namespace canhazgpu::testing
