#include "host/linux_process_table.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace canhazgpu::host {
namespace {

TEST(ParseProcStatTest, HandlesSpacesAndParensInCommand) {
  ProcessInfo info;
  std::string stat =
      "4242 (my (odd) cmd) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 "
      "1000 100 18446744073709551615";
  ASSERT_TRUE(ParseProcStat(stat, &info));
  EXPECT_EQ(info.pid, 4242);
  EXPECT_EQ(info.ppid, 17);
  EXPECT_EQ(info.pgid, 4242);
  EXPECT_EQ(info.state, 'S');
  EXPECT_EQ(info.start_ticks, 987654u);
}

TEST(ParseProcStatTest, RejectsTruncatedText) {
  ProcessInfo info;
  EXPECT_FALSE(ParseProcStat("4242 (x) S 1 2", &info));
  EXPECT_FALSE(ParseProcStat("garbage", &info));
}

TEST(LinuxProcessTableTest, FindsSelfWithRealUidAndArgv) {
  LinuxProcessTable table;
  auto self = table.Find(getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->uid, getuid());
  EXPECT_EQ(self->ppid, getppid());
  ASSERT_FALSE(self->argv.empty());
  EXPECT_NE(self->argv[0].find("host_test"), std::string::npos);
  EXPECT_TRUE(table.IsAlive({getpid(), self->start_ticks}));
  EXPECT_FALSE(table.IsAlive({getpid(), self->start_ticks + 1})) << "pid reuse must read as dead";
}

TEST(LinuxProcessTableTest, FindBasicAgreesWithFindOnTheStatFields) {
  LinuxProcessTable table;
  auto full = table.Find(getpid());
  auto basic = table.FindBasic(getpid());
  ASSERT_TRUE(full.has_value());
  ASSERT_TRUE(basic.has_value());
  EXPECT_EQ(basic->pid, full->pid);
  EXPECT_EQ(basic->ppid, full->ppid);
  EXPECT_EQ(basic->pgid, full->pgid);
  EXPECT_EQ(basic->start_ticks, full->start_ticks);
  EXPECT_EQ(basic->state, 'R');
  EXPECT_FALSE(table.FindBasic(0).has_value());
  EXPECT_FALSE(table.FindBasic(1 << 30).has_value());  // above pid_max
}

TEST(LinuxProcessTableTest, ZombieIsNotAlive) {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  LinuxProcessTable table;
  // Wait until the child has exited but is not yet reaped.
  siginfo_t info;
  ASSERT_EQ(waitid(P_PID, pid, &info, WEXITED | WNOWAIT), 0);
  auto zombie = table.Find(pid);
  ASSERT_TRUE(zombie.has_value());
  EXPECT_EQ(zombie->state, 'Z');
  EXPECT_FALSE(table.IsAlive({pid, zombie->start_ticks}));
  waitpid(pid, nullptr, 0);
  EXPECT_FALSE(table.Find(pid).has_value());
}

// A job whose leader exited but whose worker (same process group) runs on is
// alive; once the worker is gone too, it is not.
TEST(LinuxProcessTableTest, JobLivesWhileAnyGroupMemberRuns) {
  int ready[2], release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  pid_t leader = fork();
  if (leader == 0) {
    setpgid(0, 0);
    if (fork() == 0) {  // the worker: waits until the test lets it go
      char c;
      close(release[1]);
      ssize_t ignored = write(ready[1], "r", 1);
      (void)ignored;
      ignored = read(release[0], &c, 1);
      _exit(0);
    }
    _exit(0);  // the leader leaves the worker behind
  }
  setpgid(leader, leader);
  close(release[0]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  LinuxProcessTable table;
  auto info = table.Find(leader);
  ASSERT_TRUE(info.has_value());
  ProcessRef job{leader, info->start_ticks};
  waitpid(leader, nullptr, 0);
  EXPECT_FALSE(table.IsAlive(job));
  EXPECT_TRUE(table.JobAlive({.leader = job})) << "the worker still runs in the job's group";
  close(release[1]);  // the worker exits; init reaps it
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = !table.JobAlive({.leader = job});
    if (!gone) usleep(10'000);
  }
  EXPECT_TRUE(gone);
  close(ready[0]);
  close(ready[1]);
}

TEST(LinuxProcessTableTest, NamesUsers) {
  LinuxProcessTable table;
  EXPECT_EQ(table.UserName(0), "root");
  EXPECT_EQ(table.UserName(4000000000u), "4000000000");
}

}  // namespace
}  // namespace canhazgpu::host
