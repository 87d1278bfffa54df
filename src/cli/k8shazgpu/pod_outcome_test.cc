#include "cli/k8shazgpu/pod_outcome.h"

#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;

json PodWith(const json& status, const std::string& node = "node-0") {
  json pod = {{"metadata", {{"name", "p"}}}, {"spec", json::object()}, {"status", status}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

json Main(const json& state) { return {{{"name", "main"}, {"state", state}}}; }

TEST(PodOutcomeTest, StagesFollowTheNodeAndTheContainer) {
  EXPECT_EQ(StageOf(PodWith({{"phase", "Pending"}}, "")), PodStage::kPending);
  EXPECT_EQ(StageOf(PodWith({{"phase", "Pending"}})), PodStage::kScheduled);
  EXPECT_EQ(StageOf(PodWith({{"phase", "Running"},
                             {"containerStatuses", Main({{"running", json::object()}})}})),
            PodStage::kRunning);
  EXPECT_EQ(StageOf(PodWith({{"phase", "Running"},
                             {"containerStatuses", Main({{"terminated", {{"exitCode", 0}}}})}})),
            PodStage::kFinished);
  EXPECT_EQ(StageOf(PodWith({{"phase", "Failed"}}, "")), PodStage::kFinished);
}

TEST(PodOutcomeTest, TheContainersCodeOr128PlusItsSignal) {
  EXPECT_EQ(
      OutcomeOf(PodWith({{"containerStatuses", Main({{"terminated", {{"exitCode", 3}}}})}}), "")
          .exit_code,
      3);
  const PodOutcome killed = OutcomeOf(
      PodWith({{"containerStatuses", Main({{"terminated", {{"exitCode", 0}, {"signal", 9}}}})}}),
      "");
  EXPECT_EQ(killed.exit_code, 137);
  EXPECT_EQ(killed.message, "");
  const PodOutcome deadline = OutcomeOf(
      PodWith({{"phase", "Failed"},
               {"reason", "DeadlineExceeded"},
               {"message", "Pod was active on the node longer than the specified deadline"},
               {"containerStatuses", Main({{"terminated", {{"exitCode", 137}}}})}}),
      "");
  EXPECT_EQ(deadline.exit_code, 137);
  EXPECT_EQ(deadline.message,
            "pod p: DeadlineExceeded: Pod was active on the node longer than the specified "
            "deadline");
}

TEST(PodOutcomeTest, APodThatNeverRanSaysWhyWithThePrepareErrorVerbatim) {
  const json failed =
      PodWith({{"phase", "Failed"}, {"reason", "DeadlineExceeded"}, {"message", "too long"}});
  EXPECT_EQ(OutcomeOf(failed, "").exit_code, 1);
  EXPECT_EQ(OutcomeOf(failed, "").message, "pod p never ran: DeadlineExceeded: too long");
  EXPECT_EQ(OutcomeOf(failed, "Failed to prepare dynamic resources: GPU 0 is gone").message,
            "pod p never ran: Failed to prepare dynamic resources: GPU 0 is gone");
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
