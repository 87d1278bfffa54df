#include "cli/common/dispatch.h"

#include <set>

#include "cli/common/exit_code.h"
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

struct FakeContext {
  std::vector<std::string> seen;
};

int Record(FakeContext& ctx, const std::vector<std::string>& args) {
  ctx.seen = args;
  return 7;
}

const std::vector<Command<FakeContext>>& FakeTable() {
  static const std::vector<Command<FakeContext>> kTable = {
      {"status", "shows", "[flags]", {{.name = "json", .help = "j"}}, Record},
      {"secret", "hidden one", "", {}, Record, /*hidden=*/true},
  };
  return kTable;
}

ProgramFront Front() {
  return {.name = "prog",
          .version_line = "prog 1.2 (abc)",
          .globals = {{.name = "state", .has_value = true, .help = "where"}},
          .globals_help = "\nglobals here\n"};
}

FrontChoice Choose(std::vector<std::string> args) {
  return ChooseCommand(Front(), FakeTable(), args);
}

TEST(CommandFrontTest, ACommandRunsWithItsArgumentsAndTheGlobalFlagsMovedAfterIt) {
  FrontChoice choice = Choose({"--state", "f", "status", "--json"});
  ASSERT_FALSE(choice.exit_code);
  EXPECT_EQ(choice.command, 0u);
  EXPECT_EQ(choice.args, (std::vector<std::string>{"--state", "f", "--json"}));
  FakeContext ctx;
  EXPECT_EQ(FakeTable()[choice.command].run(ctx, choice.args), 7);
  EXPECT_EQ(ctx.seen, choice.args);
  EXPECT_EQ(Choose({"secret"}).command, 1u) << "a hidden command still runs";
}

TEST(CommandFrontTest, NoArgumentsIsUsageOnStderrAndHelpIsUsageOnStdout) {
  FrontChoice none = Choose({});
  EXPECT_EQ(none.exit_code, kExitUsage);
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err, "usage: prog COMMAND [flags]\n\n  status  shows\n\nglobals here\n");
  for (const char* help : {"help", "--help", "-h"}) {
    FrontChoice asked = Choose({help});
    EXPECT_EQ(asked.exit_code, kExitOk);
    EXPECT_EQ(asked.out, none.err) << help;
    EXPECT_EQ(asked.out.find("secret"), std::string::npos);
  }
}

TEST(CommandFrontTest, VersionCommandHelpAndRefusals) {
  EXPECT_EQ(Choose({"--version"}).out, "prog 1.2 (abc)\n");
  FrontChoice help = Choose({"status", "--help"});
  EXPECT_EQ(help.exit_code, kExitOk);
  EXPECT_EQ(help.out.rfind("usage: prog status [flags]\n\nshows\n", 0), 0u) << help.out;
  FrontChoice unknown = Choose({"stauts"});
  EXPECT_EQ(unknown.exit_code, kExitUsage);
  EXPECT_EQ(unknown.err,
            "prog: unknown command 'stauts' (did you mean 'status'?); see 'prog --help'\n");
  FrontChoice bare = Choose({"--state", "f"});
  EXPECT_EQ(bare.exit_code, kExitUsage);
  EXPECT_EQ(bare.err, "prog: no command after the global flags; see 'prog --help'\n");
  FrontChoice bad = Choose({"--bogus", "status"});
  EXPECT_EQ(bad.exit_code, kExitUsage);
  EXPECT_EQ(bad.err.rfind("prog: ", 0), 0u);
  EXPECT_EQ(FindIn(FakeTable(), "status"), &FakeTable()[0]);
  EXPECT_EQ(FindIn(FakeTable(), "nope"), nullptr);
}

}  // namespace
}  // namespace canhazgpu::cli
