// reserve's request: run's selection flags with a placeholder command, the
// reservation label on its pod, -d/--duration as the deadline, -w/--wait
// or --nonblock for waiting in line, --short, --note; bad input is one
// InvalidArgument line.
#include <set>

#include "cli/k8shazgpu/commands.h"
#include "cli/k8shazgpu/run_objects.h"
#include "cli/k8shazgpu/testing/schema_refusals.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<RunRequest> ParseReserve(std::vector<std::string> args) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, ReserveFlags(), "reserve");
  if (!flags.ok()) return flags.status();
  return ParseReserveRequest(*flags, "ubuntu:24.04");
}

// As `canhazgpu reserve`: 30 minutes held, waiting in line until served.
TEST(ReserveRequestTest, DefaultsAreTheHostToolsThirtyMinutesAndWaitingUntilServed) {
  absl::StatusOr<RunRequest> r = ParseReserve({});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->reservation);
  EXPECT_EQ(r->gpus, 1);
  EXPECT_EQ(r->timeout_seconds, 30 * 60);
  EXPECT_EQ(r->wait_seconds, std::nullopt);
  EXPECT_FALSE(r->nonblock);
  EXPECT_FALSE(r->short_output);
  // A reservation ends by its deadline or release, never by a run's TTL.
  EXPECT_EQ(r->ttl_seconds, std::nullopt);
  EXPECT_FALSE(r->argv.empty());
  const nlohmann::json pod = PodObject(*r, {.run_id = "abcde12345",
                                            .user = "alice",
                                            .pod = "alice-abcde",
                                            .claim = "alice-abcde-gpus-abcde"});
  EXPECT_EQ(pod["metadata"]["labels"][kKindLabel], kReservationKind);
  EXPECT_EQ(pod["spec"]["activeDeadlineSeconds"], 30 * 60);
  EXPECT_FALSE(pod["metadata"].contains("annotations"));
  EXPECT_THAT(Refusals(pod), ::testing::IsEmpty());
}

TEST(ReserveRequestTest, TakesRunsSelectionFlags) {
  absl::StatusOr<RunRequest> r =
      ParseReserve({"--gpus", "2", "--min-memory", "40Gi", "--node", "node-1", "--duration", "30m",
                    "--wait", "5s", "--name", "mine"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->gpus, 2);
  EXPECT_EQ(r->wants.min_memory, "40Gi");
  EXPECT_EQ(r->node, "node-1");
  EXPECT_EQ(r->timeout_seconds, 1800);
  EXPECT_EQ(r->wait_seconds, 5);
  EXPECT_EQ(r->name, "mine");
}

// Issue 32: reserve took run's flags through a hand-kept list, so a new
// selection flag silently did not exist there.
// Issue 33: the host tool's flags with the host tool's meaning.
TEST(ReserveRequestTest, TakesTheHostToolsShortFlagsNoteAndNonblock) {
  absl::StatusOr<RunRequest> r =
      ParseReserve({"-d", "5m", "-w", "1m", "-s", "--note", "debugging the loader"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->timeout_seconds, 300);
  EXPECT_EQ(r->wait_seconds, 60);
  EXPECT_TRUE(r->short_output);
  EXPECT_EQ(r->note, "debugging the loader");
  const nlohmann::json pod = PodObject(*r, {.run_id = "abcde12345",
                                            .user = "alice",
                                            .pod = "alice-abcde",
                                            .claim = "alice-abcde-gpus-abcde"});
  EXPECT_EQ(pod["metadata"]["annotations"][kNoteAnnotation], "debugging the loader");
  EXPECT_THAT(Refusals(pod), ::testing::IsEmpty());
  absl::StatusOr<RunRequest> now = ParseReserve({"--nonblock"});
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_TRUE(now->nonblock);
}

TEST(ReserveRequestTest, TakesEveryPlacementFlagThatRunTakes) {
  std::set<std::string> reserve, run;
  for (const FlagSpec& f : ReserveFlags()) reserve.insert(f.name);
  for (const FlagSpec& f : RunFlags()) run.insert(f.name);
  for (const FlagSpec& f : PlacementFlags()) {
    EXPECT_TRUE(reserve.contains(f.name)) << "--" << f.name;
    EXPECT_TRUE(run.contains(f.name)) << "--" << f.name;
  }
  absl::StatusOr<RunRequest> r = ParseReserve(
      {"--where", "device.attributes[\"gpu.canhazgpu.dev\"].type == \"gpu\"", "--where", "true"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->wants.where.size(), 2u);
}

TEST(ReserveRequestTest, BadInputIsOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--", "sleep", "1"}, "runs no command"},
      {{"extra"}, "unexpected argument 'extra'"},
      {{"--gpus", "2", "-G", "node-0:0"}, "--gpus and -G"},
      {{"--duration", "soon"}, "soon"},
      {{"--share", "x"}, "--share"},
      {{"--where", "device.attributes["}, "1:"},
      {{"--wait", "1m", "--nonblock"}, "--wait and --nonblock"},
      {{"--note", "two\nlines"}, "one line"},
  };
  for (const auto& [args, says] : cases) {
    absl::StatusOr<RunRequest> r = ParseReserve(args);
    ASSERT_FALSE(r.ok()) << ::testing::PrintToString(args);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(says)) << ::testing::PrintToString(args);
    EXPECT_EQ(std::string(r.status().message()).find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
