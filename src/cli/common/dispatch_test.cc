#include "cli/common/dispatch.h"

#include <set>

#include "core/strings.h"
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

// Every help text starts in one column, in both lists, however long a flag
// and its value name are (--remote-timeout DURATION once ran into its text).
TEST(DispatchTest, FlagHelpTextsLineUpAcrossBothLists) {
  const std::string help = CommandHelp(
      "prog", "status", "[flags]", "shows it",
      {{.name = "json", .short_name = 'j', .help = "JSON output"},
       {.name = "remote-timeout", .has_value = true, .value_name = "DURATION", .help = "give up"}},
      {{.name = "state", .has_value = true, .value_name = "PATH", .help = "state file"}});
  std::set<size_t> columns;
  for (std::string_view line : Split(help, '\n')) {
    if (!line.starts_with("  -") && !line.starts_with("      --")) continue;
    for (std::string_view text : {"JSON output", "give up", "state file"}) {
      if (size_t at = line.find(text); at != std::string_view::npos) {
        columns.insert(at);
        EXPECT_EQ(line.substr(at - 2, 2), "  ") << line;
      }
    }
  }
  EXPECT_EQ(columns.size(), 1u) << help;
}

TEST(DispatchTest, ACommandWithoutFlagsHasNoEmptyFlagsHeading) {
  const std::string help = CommandHelp("prog", "completion", "bash|zsh", "completes", {},
                                       {{.name = "state", .help = "where"}});
  EXPECT_EQ(help.find("\nflags:"), std::string::npos) << help;
  EXPECT_NE(help.find("global flags:\n"), std::string::npos) << help;
}

}  // namespace
}  // namespace canhazgpu::cli
