#include "kubesim/faults.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(FaultsTest, RulesMatchVerbAndResourceAndAreUsedUp) {
  FaultInjector faults;
  faults.Add({.verb = "list", .resource = "pods", .count = 2, .code = 503});
  faults.Add({.resource = "resourceslices", .code = 429, .retry_after_seconds = 3});
  EXPECT_FALSE(faults.Take("get", "pods"));
  EXPECT_FALSE(faults.Take("list", "nodes"));
  EXPECT_EQ(faults.Take("list", "pods")->code, 503);
  EXPECT_EQ(faults.Take("list", "pods")->code, 503);
  EXPECT_FALSE(faults.Take("list", "pods"));  // spent
  std::optional<Fault> any_verb = faults.Take("create", "resourceslices");
  ASSERT_TRUE(any_verb);
  EXPECT_EQ(any_verb->retry_after_seconds, 3);
  EXPECT_TRUE(faults.Pending().empty());
}

TEST(FaultsTest, JsonRoundTripsAndRefusesWhatItCannotDo) {
  absl::StatusOr<Fault> fault = Fault::FromJson(
      json::parse(R"({"verb":"watch","resource":"pods","count":4,"code":500,"stallMillis":250})"));
  ASSERT_TRUE(fault.ok()) << fault.status();
  EXPECT_EQ(fault->stall, std::chrono::milliseconds(250));
  EXPECT_EQ(Fault::FromJson(fault->ToJson())->ToJson(), fault->ToJson());

  const std::pair<const char*, const char*> bad[] = {
      {R"({"code":302})", "error status"},
      {R"({"verb":"get"})", "give a code, a stallMillis, or both"},
      {R"({"code":503,"count":-1})", "count"},
      {R"({"code":503,"stallMillis":999999999})", "stallMillis"},
      {R"({"code":"503"})", "code"},
      {R"({"code":503,"verb":""})", "verb"},
      {R"({"code":503,"why":1})", "unknown key \"why\""},
      {"[1]", "a JSON object"},
  };
  for (const auto& [text, message] : bad) {
    absl::StatusOr<Fault> f = Fault::FromJson(json::parse(text));
    EXPECT_FALSE(f.ok()) << text;
    EXPECT_THAT(f.status().message(), HasSubstr(message)) << text;
  }
}

}  // namespace
}  // namespace canhazgpu::kubesim
