// What `kubectl exec -i` and `-t` need of a container's process: input it
// reads, and a terminal.
#include "simkubelet/container_process.h"

#include <unistd.h>

#include <array>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubeletplugin/testing/plugin_harness.h"

namespace canhazgpu::simkubelet {
namespace {

using ::testing::HasSubstr;

// Runs `spec`, feeding it `input` then its end, and returns what it printed
// and its exit code.
std::pair<std::string, int> RunWithInput(ProcessSpec spec, const std::string& input) {
  std::mutex mu;
  std::string out;
  auto process = ContainerProcess::Start(
      spec,
      [&](std::string_view, std::string_view data) {
        std::lock_guard lock(mu);
        out.append(data);
      },
      [](const ProcessExit&) {});
  EXPECT_TRUE(process.ok()) << process.status();
  if (!process.ok()) return {"", -1};
  EXPECT_TRUE((*process)->WriteInput(input));
  (*process)->CloseInput();
  std::optional<ProcessExit> exit = (*process)->Wait(std::chrono::seconds(30));
  EXPECT_TRUE(exit.has_value());
  std::lock_guard lock(mu);
  return {out, exit ? exit->exit_code : -1};
}

TEST(ContainerProcessTest, APipedStdinIsReadToItsEnd) {
  auto [out, code] = RunWithInput({.argv = {"sh", "-c", "read a; read b; echo got $a $b; exit 4"},
                                   .work_dir = "/",
                                   .stdin_pipe = true},
                                  "one\ntwo\n");
  EXPECT_EQ(out, "got one two\n");
  EXPECT_EQ(code, 4);
}

TEST(ContainerProcessTest, ATerminalIsTheControllingOneAndEndsWithEndOfFile) {
  auto [out, code] =
      RunWithInput({.argv = {"sh", "-c", "test -t 0 && test -t 1 && echo tty; cat; echo done"},
                    .work_dir = "/",
                    .tty = true},
                   "typed\n");
  EXPECT_THAT(out, HasSubstr("tty"));
  EXPECT_THAT(out, HasSubstr("typed"));  // echoed by the terminal, then by cat
  EXPECT_THAT(out, HasSubstr("done"));
  EXPECT_EQ(code, 0);
}

TEST(ContainerProcessTest, WritingToAProcessThatIsGoneFailsWithoutASignal) {
  auto process = ContainerProcess::Start(
      {.argv = {"true"}, .work_dir = "/", .stdin_pipe = true},
      [](std::string_view, std::string_view) {}, [](const ProcessExit&) {});
  ASSERT_TRUE(process.ok());
  ASSERT_TRUE((*process)->Wait(std::chrono::seconds(30)).has_value());
  std::string big(1 << 20, 'x');
  EXPECT_FALSE((*process)->WriteInput(big));
}

// A container in a pod sandbox sees the pod's hosts file as /etc/hosts —
// and what is written into it later, in place — and the pod's hostname;
// the machine's stay as they were.
TEST(ContainerProcessTest, ASandboxHasThePodsHostsFileAsItChangesAndItsHostname) {
  if (absl::Status why = CheckPrivateNamespaces(); !why.ok()) {
    GTEST_SKIP() << "no private mount namespaces here: " << why;
  }
  kubeletplugin::testing::TempDir dir;
  const std::string hosts = dir.path() + "/etc-hosts";
  std::ofstream(hosts) << "127.0.0.1 localhost\n";
  std::filesystem::permissions(hosts, std::filesystem::perms::all);  // for a nobody rerun
  std::mutex mu;
  std::string out;
  auto process = ContainerProcess::Start(
      {.argv = {"sh", "-c", "hostname; until getent hosts late.name; do sleep 0.05; done"},
       .work_dir = "/",
       .sandbox = {.hosts_file = hosts, .hostname = "pod-a"}},
      [&](std::string_view, std::string_view data) {
        std::lock_guard lock(mu);
        out.append(data);
      },
      [](const ProcessExit&) {});
  ASSERT_TRUE(process.ok()) << process.status();
  std::ofstream(hosts) << "127.0.0.1 localhost\n127.42.16.9 late.name\n";  // O_TRUNC: in place
  std::optional<ProcessExit> exit = (*process)->Wait(std::chrono::seconds(30));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  std::lock_guard lock(mu);
  EXPECT_THAT(out, ::testing::MatchesRegex("pod-a\n127.42.16.9 +late.name\n"));
  std::ifstream machine("/etc/hosts");
  EXPECT_THAT(std::string(std::istreambuf_iterator<char>(machine), {}),
              ::testing::Not(HasSubstr("late.name")));
  std::array<char, 256> hostname = {};
  ::gethostname(hostname.data(), hostname.size() - 1);
  EXPECT_STRNE(hostname.data(), "pod-a");
}

// The same for a user who is not root: the sandbox then takes a user
// namespace that maps only that user. Run as nobody where this test runs
// as root and has setpriv(1).
TEST(ContainerProcessTest, ASandboxNeedsNoRoot) {
  if (std::getenv("CANHAZGPU_SANDBOX_RERUN") != nullptr) GTEST_SKIP() << "the rerun itself";
  if (::geteuid() != 0) {
    GTEST_SKIP() << "not root: the test above took the user namespace path";
  }
  if (::system("command -v setpriv >/dev/null") != 0) GTEST_SKIP() << "no setpriv(1)";
  kubeletplugin::testing::TempDir dir;
  std::filesystem::permissions(dir.path(), std::filesystem::perms::all);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command =
      "cd " + dir.path() +
      " && env -u GTEST_OUTPUT CANHAZGPU_SANDBOX_RERUN=1 setpriv --reuid=65534 --regid=65534 "
      "--clear-groups " +
      self +
      " --gtest_filter=ContainerProcessTest.ASandboxHasThePodsHostsFileAsItChangesAndItsHostname "
      "> out 2>&1";
  const int rc = ::system(command.c_str());
  std::ifstream in(dir.path() + "/out");
  const std::string out(std::istreambuf_iterator<char>(in), {});
  if (out.find("[  SKIPPED ]") != std::string::npos) {
    GTEST_SKIP() << "as nobody: " << out;
  }
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("[  PASSED  ] 1 test"));
}

}  // namespace
}  // namespace canhazgpu::simkubelet
