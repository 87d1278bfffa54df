#include "web/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "web/assets.h"

namespace canhazgpu::web {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::ordered_json;

TEST(MetricsTest, CountsStatesReservationsQueueAndMemory) {
  Json gpus = Json::parse(R"([
    {"gpu_id": 0, "status": "AVAILABLE", "memory_used_mib": 0, "memory_total_mib": 81920},
    {"gpu_id": 1, "status": "IN_USE", "user": "alice", "type": "RUN",
     "memory_used_mib": 2, "memory_total_mib": 81920},
    {"gpu_id": 2, "status": "IN_USE", "user": "alice", "type": "RUN"},
    {"gpu_id": 3, "status": "IN_USE", "user": "b\"o\\b\n", "type": "MANUAL"}
  ])");
  Json queue = Json::parse(R"({"entries": [{"waited_seconds": 12}, {"waited_seconds": 3}],
                               "total_waiting": 2})");
  std::string text = MetricsText(gpus, queue, 0.0015);
  EXPECT_THAT(text, HasSubstr("# TYPE canhazgpu_gpus gauge\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_gpus{state=\"available\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_gpus{state=\"in_use\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_gpus{state=\"error\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_reserved_gpus{user=\"alice\",type=\"run\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("canhazgpu_reserved_gpus{user=\"b\\\"o\\\\b\\\\n\",type=\"manual\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_queue_length 2\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_queue_oldest_wait_seconds 12\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_gpu_memory_used_bytes{gpu=\"1\"} 2097152\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_gpu_memory_total_bytes{gpu=\"0\"} 85899345920\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_scrape_duration_seconds 0.0015\n"));
}

// Issue 14: label values are UTF-8 text without controls, escaped as the
// exposition format requires on top.
TEST(MetricsTest, LabelValuesAreValidUtf8WithoutControls) {
  Json gpus = Json::array();
  gpus.push_back({{"gpu_id", 0}, {"status", "IN_USE"}, {"user", "x\xff"}, {"type", "MANUAL"}});
  EXPECT_THAT(MetricsText(gpus, Json::parse(R"({"entries": [], "total_waiting": 0})"), 0),
              HasSubstr("canhazgpu_reserved_gpus{user=\"x\\\\xff\",type=\"manual\"} 1\n"));
}

// A GPU shared by memory is one GPU in state "shared", not "in_use", and its
// shares are counted per user: never a label value like "alice, bob".
TEST(MetricsTest, SharedGpusAreCountedPerShare) {
  Json gpus = Json::parse(R"([
    {"gpu_id": 0, "status": "IN_USE", "user": "alice, bob", "type": "SHARED", "shared": true,
     "memory_left_bytes": 1073741824,
     "shares": [{"user": "alice", "type": "RUN", "memory_bytes": 10737418240},
                {"user": "bob", "type": "MANUAL", "memory_bytes": 2147483648},
                {"user": "alice", "type": "RUN", "memory_bytes": 1073741824}]},
    {"gpu_id": 1, "status": "IN_USE", "user": "alice", "type": "RUN"}
  ])");
  std::string text = MetricsText(gpus, Json::parse(R"({"entries": [], "total_waiting": 0})"), 0);
  EXPECT_THAT(text, HasSubstr("canhazgpu_gpus{state=\"shared\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_gpus{state=\"in_use\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_reserved_gpus{user=\"alice\",type=\"run\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("alice, bob")));
  EXPECT_THAT(text, Not(HasSubstr("type=\"shared\"")));
  EXPECT_THAT(text, HasSubstr("canhazgpu_gpu_shares{user=\"alice\",type=\"run\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_gpu_shares{user=\"bob\",type=\"manual\"} 1\n"));
  EXPECT_THAT(
      text, HasSubstr("canhazgpu_gpu_share_memory_bytes{gpu=\"0\",user=\"alice\"} 11811160064\n"));
  EXPECT_THAT(text,
              HasSubstr("canhazgpu_gpu_share_memory_bytes{gpu=\"0\",user=\"bob\"} 2147483648\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_gpu_share_memory_left_bytes{gpu=\"0\"} 1073741824\n"));
}

TEST(MetricsTest, EmptyQueue) {
  std::string text =
      MetricsText(Json::array(), Json::parse(R"({"entries": [], "total_waiting": 0})"), 0);
  EXPECT_THAT(text, HasSubstr("canhazgpu_queue_length 0\n"));
  EXPECT_THAT(text, HasSubstr("canhazgpu_queue_oldest_wait_seconds 0\n"));
}

TEST(AssetsTest, PageScriptAndStyleAreEmbedded) {
  std::map<std::string, std::string> by_path;
  for (const Asset& a : Assets()) by_path[std::string(a.path)] = std::string(a.content);
  ASSERT_TRUE(by_path.contains("/index.html"));
  EXPECT_THAT(by_path["/index.html"], HasSubstr("<script src=\"/app.js\">"));
  // User text goes through textContent only.
  EXPECT_THAT(by_path["/app.js"], Not(HasSubstr("innerHTML")));
  EXPECT_TRUE(by_path.contains("/style.css"));
}

}  // namespace
}  // namespace canhazgpu::web
