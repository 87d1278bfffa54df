// Shell completion and the man page, both generated from the command table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "integration/cli_runner.h"

namespace canhazgpu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class CliCompletionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "3"}).exit_code, 0);
    CliResult script = host_.Run({"completion", "bash"});
    ASSERT_EQ(script.exit_code, 0) << script.err;
    script_path_ = host_.dir() + "/completion.bash";
    WriteFile(script_path_, script.out);
  }
  // What bash completes for the words typed so far (the last one partial).
  std::string Complete(const std::vector<std::string>& words) {
    std::string array;
    for (const std::string& w : words) array += "'" + w + "' ";
    std::string program = "source '" + script_path_ + "'; COMP_WORDS=(" + array +
                          "); COMP_CWORD=" + std::to_string(words.size() - 1) +
                          "; _canhazgpu; printf '%s\\n' \"${COMPREPLY[@]}\"";
    auto env = host_.env();
    env["PATH"] =
        std::string(CANHAZGPU_BINARY).substr(0, std::string(CANHAZGPU_BINARY).rfind('/')) + ":" +
        std::getenv("PATH");
    CliResult r = RunProgram({"bash", "-c", program}, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  CliHost host_;
  std::string script_path_;
};

TEST_F(CliCompletionTest, BashCompletesCommandsFlagsAndGpuIds) {
  EXPECT_EQ(Complete({"canhazgpu", "st"}), "status\n");
  EXPECT_EQ(Complete({"canhazgpu", "re"}), "reserve\nrelease\nreport\n");
  std::string reserve_flags = Complete({"canhazgpu", "reserve", "--n"});
  EXPECT_EQ(reserve_flags, "--note\n--nonblock\n--no-color\n");
  EXPECT_THAT(Complete({"canhazgpu", "status", "--"}), HasSubstr("--remote-timeout\n"));
  // GPU ids come from the pool.
  EXPECT_EQ(Complete({"canhazgpu", "release", "--gpu-ids", ""}), "0\n1\n2\n");
  EXPECT_EQ(Complete({"canhazgpu", "run", "-G", "1"}), "1\n");
  // A flag's value is not completed as a flag.
  EXPECT_EQ(Complete({"canhazgpu", "reserve", "--duration", "-"}), "\n");
  // The shells, not flags (the case was written twice, the flags' first).
  EXPECT_EQ(Complete({"canhazgpu", "completion", ""}), "bash\nzsh\n");
  // Hidden commands stay hidden.
  EXPECT_THAT(Complete({"canhazgpu", "m"}), Not(HasSubstr("manpage")));
}

TEST_F(CliCompletionTest, ZshScriptCoversEveryCommandAndFlag) {
  CliResult zsh = host_.Run({"completion", "zsh"});
  ASSERT_EQ(zsh.exit_code, 0);
  EXPECT_THAT(zsh.out, ::testing::StartsWith("#compdef canhazgpu chg\n"));
  for (const char* expected : {"'status:", "'reserve:", "'--gpu-ids[", ":_canhazgpu_gpu_ids'",
                               "'--remote-timeout[", "'*::command:_normal'", "'--config["}) {
    EXPECT_THAT(zsh.out, HasSubstr(expected));
  }
  EXPECT_EQ(host_.Run({"completion", "fish"}).exit_code, 2);
}

TEST_F(CliCompletionTest, ManPageListsCommandsFlagsAndEnvironment) {
  CliResult man = host_.Run({"manpage"});
  ASSERT_EQ(man.exit_code, 0);
  EXPECT_THAT(man.out, ::testing::StartsWith(".TH CANHAZGPU 1"));
  for (const char* expected : {".SS \"canhazgpu reserve [flags]\"", ".SS \"canhazgpu web [flags]\"",
                               "\\fBCANHAZGPU_RUN_TIMEOUT\\fR",
                               "config key \\fBreserve.duration\\fR", ".SH EXIT STATUS"}) {
    EXPECT_THAT(man.out, HasSubstr(expected));
  }
  // The build made the same page.
  EXPECT_EQ(ReadFile(std::string(CANHAZGPU_BINARY) + ".1"), man.out);
  EXPECT_THAT(host_.Run({"--help"}).out, Not(HasSubstr("manpage")));
}

}  // namespace
}  // namespace canhazgpu::testing
