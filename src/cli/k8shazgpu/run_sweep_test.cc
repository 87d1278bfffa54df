// Which finished runs the next command of their user deletes: only
// finished pods with a TTL that has passed, measured from when they ended.
#include "cli/k8shazgpu/run_sweep.h"

#include "cli/k8shazgpu/run_objects.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// 2026-11-29T10:00:00Z
const TimePoint kTen = FromEpochMillis(1'795'946'400'000);

json PodEnded(const std::string& name, const std::string& phase, const std::string& finished,
              const std::string& ttl) {
  json pod = {{"metadata", {{"name", name}, {"creationTimestamp", "2026-11-29T08:00:00Z"}}},
              {"status", {{"phase", phase}}}};
  if (!ttl.empty()) pod["metadata"]["annotations"] = {{kTtlAnnotation, ttl}};
  if (!finished.empty()) {
    pod["status"]["containerStatuses"] = {
        {{"name", "main"},
         {"state", {{"terminated", {{"exitCode", 0}, {"finishedAt", finished}}}}}}};
  }
  return pod;
}

TEST(RunSweepTest, OnlyFinishedRunsPastTheirTtlExpire) {
  const std::vector<json> pods = {
      PodEnded("old", "Succeeded", "2026-11-29T08:59:00Z", "3600"),
      PodEnded("recent", "Failed", "2026-11-29T09:30:00Z", "3600"),
      PodEnded("running", "Running", "", "1"),
      PodEnded("kept", "Succeeded", "2026-11-28T00:00:00Z", ""),
      PodEnded("garbled", "Succeeded", "2026-11-28T00:00:00Z", "soon"),
      // Failed before its container ran: from its creation.
      PodEnded("never-ran", "Failed", "", "60"),
  };
  EXPECT_THAT(ExpiredRuns(pods, kTen), ElementsAre("old", "never-ran"));
  EXPECT_THAT(ExpiredRuns(pods, kTen - std::chrono::hours(3)), IsEmpty());
}

TEST(RunSweepTest, TheLastContainerToEndSaysWhenThePodFinished) {
  json pod = PodEnded("two", "Succeeded", "2026-11-29T09:00:00Z", "600");
  pod["status"]["containerStatuses"].push_back(
      {{"name", "side"},
       {"state", {{"terminated", {{"exitCode", 0}, {"finishedAt", "2026-11-29T09:55:00Z"}}}}}});
  EXPECT_EQ(FinishedAt(pod), kTen - std::chrono::minutes(5));
  EXPECT_THAT(ExpiredRuns({pod}, kTen), IsEmpty());
  EXPECT_EQ(FinishedAt(PodEnded("up", "Running", "", "")), std::nullopt);
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
