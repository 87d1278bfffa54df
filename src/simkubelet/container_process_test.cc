// What `kubectl exec -i` and `-t` need of a container's process: input it
// reads, and a terminal.
#include "simkubelet/container_process.h"

#include <condition_variable>
#include <mutex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

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

}  // namespace
}  // namespace canhazgpu::simkubelet
