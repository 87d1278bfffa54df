#include "host/job_cgroup.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "host/linux_process_table.h"

namespace canhazgpu::host {
namespace {

// A hybrid host (this project's CI machine): cgroup v1 controllers, and the
// cgroup2 hierarchy at /sys/fs/cgroup/unified.
constexpr char kHybridMountinfo[] =
    "22 1 259:1 / / rw,relatime - ext4 /dev/root rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

// systemd's unified layout, with optional fields before the separator.
constexpr char kUnifiedMountinfo[] =
    "24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "29 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 master:1 - cgroup2 "
    "cgroup2 rw,nsdelegate,memory_recursiveprot\n";

TEST(JobCgroupTest, FindsTheCgroup2MountOnAHybridHost) {
  std::optional<Cgroup2Mount> mount = ParseCgroup2Mount(kHybridMountinfo);
  ASSERT_TRUE(mount.has_value());
  EXPECT_EQ(mount->root, "/");
  EXPECT_EQ(mount->mount_point, "/sys/fs/cgroup/unified");
}

TEST(JobCgroupTest, FindsTheCgroup2MountPastOptionalFields) {
  std::optional<Cgroup2Mount> mount = ParseCgroup2Mount(kUnifiedMountinfo);
  ASSERT_TRUE(mount.has_value());
  EXPECT_EQ(mount->mount_point, "/sys/fs/cgroup");
}

TEST(JobCgroupTest, CgroupV1OnlyHostHasNoCgroup2Mount) {
  EXPECT_FALSE(
      ParseCgroup2Mount("32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
                        "40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw\n"));
  EXPECT_FALSE(ParseCgroup2Mount(""));
  EXPECT_FALSE(ParseCgroup2Mount("garbage\n41 31 0:38 / /x rw cgroup2\n")) << "no separator";
}

TEST(JobCgroupTest, DecodesEscapedMountPoints) {
  std::optional<Cgroup2Mount> mount =
      ParseCgroup2Mount("41 31 0:38 /a\\040b /mnt/my\\040cgroups rw - cgroup2 none rw\n");
  ASSERT_TRUE(mount.has_value());
  EXPECT_EQ(mount->root, "/a b");
  EXPECT_EQ(mount->mount_point, "/mnt/my cgroups");
}

TEST(JobCgroupTest, ReadsTheUnifiedLineOfProcCgroup) {
  EXPECT_EQ(ParseCgroup2Path("9:name=systemd:/\n4:memory:/process_api/4bc0\n0::/\n"), "/");
  EXPECT_EQ(
      ParseCgroup2Path("0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope\n"),
      "/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope");
  EXPECT_FALSE(ParseCgroup2Path("9:name=systemd:/\n4:memory:/a\n")) << "cgroup v1 only";
  EXPECT_FALSE(ParseCgroup2Path("0::\n")) << "v2 listed but not mounted for us";
}

TEST(JobCgroupTest, MapsACgroupPathToItsDirectory) {
  Cgroup2Mount root{"/", "/sys/fs/cgroup/unified"};
  EXPECT_EQ(CgroupDirectory(root, "/"), "/sys/fs/cgroup/unified");
  EXPECT_EQ(CgroupDirectory(root, "/a/b"), "/sys/fs/cgroup/unified/a/b");
  // A container given the subtree /kubepods/pod1 mounted at /sys/fs/cgroup.
  Cgroup2Mount sub{"/kubepods/pod1", "/sys/fs/cgroup"};
  EXPECT_EQ(CgroupDirectory(sub, "/kubepods/pod1"), "/sys/fs/cgroup");
  EXPECT_EQ(CgroupDirectory(sub, "/kubepods/pod1/job"), "/sys/fs/cgroup/job");
  EXPECT_FALSE(CgroupDirectory(sub, "/kubepods/pod12")) << "a sibling, not below the root";
  EXPECT_FALSE(CgroupDirectory(sub, "/system.slice"));
}

TEST(JobCgroupTest, JobNamesRoundTripAndOthersAreRefused) {
  EXPECT_EQ(JobCgroupName({41, 7731}), "canhazgpu-job-41-7731");
  EXPECT_EQ(ParseJobCgroupName("canhazgpu-job-41-7731"), (ProcessRef{41, 7731}));
  for (const char* name : {"canhazgpu-job-41", "canhazgpu-job--1-5", "canhazgpu-job-0-5",
                           "canhazgpu-job-41-7731-9", "user.slice", "canhazgpu-job-4x-1"}) {
    EXPECT_FALSE(ParseJobCgroupName(name)) << name;
  }
}

// Against the real cgroup v2 of this host, where it offers one.
class RealJobCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> own = OwnCgroupDirectory();
    if (!own.ok()) GTEST_SKIP() << "no cgroup v2 here: " << own.status();
    parent_ = *own;
    std::string probe = parent_ + "/canhazgpu-probe-" + std::to_string(getpid());
    if (mkdir(probe.c_str(), 0755) != 0) {
      GTEST_SKIP() << "cgroup v2 at " << parent_ << " is not writable for this user";
    }
    rmdir(probe.c_str());
  }
  void TearDown() override {
    for (pid_t pid : children_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }

  // A child that sleeps until killed, and its identity.
  ProcessRef Sleeper() {
    pid_t pid = fork();
    if (pid == 0) {
      for (;;) pause();
    }
    children_.push_back(pid);
    std::optional<ProcessInfo> info = table_.FindBasic(pid);
    return {pid, info ? info->start_ticks : 0};
  }

  std::string parent_;
  LinuxProcessTable table_;
  std::vector<pid_t> children_;
};

TEST_F(RealJobCgroupTest, HoldsTheProcessAndKillsItThenIsRemoved) {
  ProcessRef leader = Sleeper();
  absl::StatusOr<JobCgroup> cgroup = JobCgroup::Create(parent_, leader, table_);
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  std::string dir = cgroup->dir();
  EXPECT_EQ(dir, parent_ + "/" + JobCgroupName(leader));
  EXPECT_EQ(cgroup->Processes(), std::vector<int64_t>{leader.pid});
  EXPECT_EQ(ReadCgroupPopulated(dir), true);
  EXPECT_EQ(table_.CgroupPopulated(dir), true);
  EXPECT_FALSE(cgroup->Remove()) << "a populated cgroup cannot be removed";
  ASSERT_TRUE(cgroup->Kill()) << "this kernel has no cgroup.kill";
  int status = 0;
  ASSERT_EQ(waitpid(static_cast<pid_t>(leader.pid), &status, 0), leader.pid);
  children_.clear();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_TRUE(cgroup->Processes().empty());
  EXPECT_EQ(ReadCgroupPopulated(dir), false);
  EXPECT_TRUE(cgroup->Remove());
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_EQ(ReadCgroupPopulated(dir), std::nullopt) << "gone: cannot tell";
}

TEST_F(RealJobCgroupTest, DestructorRemovesTheEmptyCgroup) {
  std::string dir;
  {
    ProcessRef leader = Sleeper();
    absl::StatusOr<JobCgroup> cgroup = JobCgroup::Create(parent_, leader, table_);
    ASSERT_TRUE(cgroup.ok()) << cgroup.status();
    dir = cgroup->dir();
    kill(static_cast<pid_t>(leader.pid), SIGKILL);
    waitpid(static_cast<pid_t>(leader.pid), nullptr, 0);
    children_.clear();
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

// A wrapper SIGKILLed with its job left an empty cgroup; the next Create()
// in the same parent removes it, but not one whose first process still runs
// (it may be just moving in).
TEST_F(RealJobCgroupTest, CreateRemovesLeftoversOfExitedJobsOnly) {
  ProcessRef exited = Sleeper();
  std::string leftover = parent_ + "/" + JobCgroupName(exited);
  ASSERT_EQ(mkdir(leftover.c_str(), 0755), 0);
  kill(static_cast<pid_t>(exited.pid), SIGKILL);
  waitpid(static_cast<pid_t>(exited.pid), nullptr, 0);
  children_.clear();
  ProcessRef waiting = Sleeper();
  std::string moving_in = parent_ + "/" + JobCgroupName(waiting);
  ASSERT_EQ(mkdir(moving_in.c_str(), 0755), 0);

  ProcessRef leader = Sleeper();
  absl::StatusOr<JobCgroup> cgroup = JobCgroup::Create(parent_, leader, table_);
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  EXPECT_FALSE(std::filesystem::exists(leftover));
  EXPECT_TRUE(std::filesystem::exists(moving_in));
  rmdir(moving_in.c_str());
  EXPECT_TRUE(cgroup->Kill());
  waitpid(static_cast<pid_t>(leader.pid), nullptr, 0);
  EXPECT_TRUE(cgroup->Remove());
}

TEST_F(RealJobCgroupTest, CreateFailsCleanlyForAProcessThatIsGone) {
  ProcessRef gone = Sleeper();
  kill(static_cast<pid_t>(gone.pid), SIGKILL);
  waitpid(static_cast<pid_t>(gone.pid), nullptr, 0);
  children_.clear();
  absl::StatusOr<JobCgroup> cgroup = JobCgroup::Create(parent_, gone, table_);
  EXPECT_FALSE(cgroup.ok());
  EXPECT_FALSE(std::filesystem::exists(parent_ + "/" + JobCgroupName(gone)));
}

}  // namespace
}  // namespace canhazgpu::host
