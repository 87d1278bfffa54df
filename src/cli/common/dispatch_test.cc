#include "cli/common/dispatch.h"

#include "gtest/gtest.h"

namespace canhazgpu::cli {
namespace {

TEST(DispatchTest, CommandSummariesAlignAfterTheLongestName) {
  EXPECT_EQ(CommandList({{"run", "runs"}, {"completion", "completes"}}),
            "  run         runs\n"
            "  completion  completes\n");
}

TEST(DispatchTest, HelpBeforeTheSeparatorOnly) {
  EXPECT_TRUE(AsksForHelp({"--gpus", "1", "-h"}));
  EXPECT_TRUE(AsksForHelp({"--help"}));
  EXPECT_FALSE(AsksForHelp({"--", "python", "--help"}));
  EXPECT_FALSE(AsksForHelp({}));
}

TEST(DispatchTest, UnknownCommandSuggestsANearName) {
  EXPECT_EQ(UnknownCommand("prog", "stauts", {"status", "run"}),
            "unknown command 'stauts' (did you mean 'status'?); see 'prog --help'");
  EXPECT_EQ(UnknownCommand("prog", "frobnicate", {"status"}),
            "unknown command 'frobnicate'; see 'prog --help'");
}

TEST(DispatchTest, CommandHelpHasUsageSummaryAndBothFlagLists) {
  const std::string help =
      CommandHelp("prog", "run", "-- CMD", "runs it", {{.name = "gpus", .help = "how many"}},
                  {{.name = "state", .help = "where"}});
  EXPECT_EQ(help.rfind("usage: prog run -- CMD\n\nruns it\n\nflags:\n", 0), 0u) << help;
  EXPECT_NE(help.find("--gpus"), std::string::npos);
  EXPECT_NE(help.find("global flags:\n"), std::string::npos);
  EXPECT_NE(help.find("--state"), std::string::npos);
}

}  // namespace
}  // namespace canhazgpu::cli
