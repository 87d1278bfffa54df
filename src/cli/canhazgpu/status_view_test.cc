// Golden tests for the status table and JSON.
#include "cli/canhazgpu/status_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/common/table.h"

namespace canhazgpu::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using std::chrono::minutes;

alloc::HostStatus Sample(TimePoint now) {
  alloc::HostStatus status{.pool = {3, "fake", ""}, .threshold_bytes = 1024 * kMiB};
  GpuInfo info;
  info.product_name = "NVIDIA H100 80GB HBM3";
  info.uuid = "GPU-0";
  info.pci_bus_id = "0000:01:00.0";
  info.memory_total_bytes = 81559 * kMiB;
  alloc::GpuStatus free{.gpu = 0, .info = info, .last_released = now - minutes(5)};
  alloc::GpuStatus used{.gpu = 1, .state = alloc::GpuState::kInUse, .info = info};
  used.info->memory_used_bytes = 8452 * kMiB;
  used.reservation = Reservation{.gpu = 1,
                                 .uid = 1000,
                                 .user = "alice",
                                 .kind = ReservationKind::kManual,
                                 .start = now - minutes(90),
                                 .expires = now + minutes(30),
                                 .note = "<script>x</script>"};
  used.processes = {{.pid = 42,
                     .user = "alice",
                     .command = "vllm serve org/m",
                     .used_memory_bytes = 8452 * kMiB,
                     .model = alloc::ModelInfo{"org", "org/m"}}};
  used.model = alloc::ModelInfo{"org", "org/m"};
  alloc::GpuStatus busy{.gpu = 2, .state = alloc::GpuState::kUnreserved, .info = info};
  busy.info->memory_used_bytes = 2048 * kMiB;
  busy.processes = {{.pid = 7, .user = "bob", .used_memory_bytes = 2048 * kMiB}};
  status.gpus = {free, used, busy};
  return status;
}

TEST(StatusViewTest, TableMatchesGolden) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  EXPECT_EQ(RenderStatusTable(Sample(now), now, false),
            "GPU │ STATUS       │ USER  │ DURATION │ TYPE   │ PRODUCT        │ MEMORY            │ "
            "MODEL │ DETAILS                   │ VALIDATION         │ NOTE\n"
            "────┼──────────────┼───────┼──────────┼────────┼────────────────┼───────────────────┼─"
            "──────┼───────────────────────────┼────────────────────┼───────────────────\n"
            "0   │ ● AVAILABLE  │ -     │ -        │ -      │ H100 80GB HBM3 │ ░░░░░░░░  0.0/80G │ "
            "-     │ free for 0h 5m 0s         │ 0MiB used          │ -\n"
            "1   │ ● IN_USE     │ alice │ 1h 30m   │ MANUAL │ H100 80GB HBM3 │ █░░░░░░░  8.3/80G │ "
            "org/m │ expires in 0h 30m 0s      │ 8452MiB, 1 process │ <script>x</script>\n"
            "2   │ ⚠ UNRESERVED │ bob   │ -        │ -      │ H100 80GB HBM3 │ █░░░░░░░  2.0/80G │ "
            "-     │ 2048MiB used by 1 process │ -                  │ -\n");
}

TEST(StatusViewTest, NarrowTerminalsDropColumnsInsteadOfWrapping) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  auto json = StatusJson(Sample(now), now);
  for (size_t width : {150, 120, 100, 80, 60}) {
    std::string table = RenderStatusTable(json, {.width = width});
    std::string header = table.substr(0, table.find('\n'));
    size_t start = 0;
    for (size_t end; (end = table.find('\n', start)) != std::string::npos; start = end + 1) {
      EXPECT_LE(DisplayWidth(table.substr(start, end - start)), width) << table;
    }
    EXPECT_THAT(header, StartsWith("GPU │ STATUS       │ USER"));
    EXPECT_THAT(table, HasSubstr("alice")) << "the user always stays";
  }
  // The least useful go first.
  std::string table = RenderStatusTable(json, {.width = 150});
  EXPECT_THAT(table, Not(HasSubstr("VALIDATION")));
  EXPECT_THAT(table, HasSubstr("DETAILS"));
  EXPECT_THAT(RenderStatusTable(json, {.width = 0}), HasSubstr("VALIDATION"));
}

TEST(StatusViewTest, MemoryBar) {
  EXPECT_EQ(MemoryBar(0, 81920, false), "░░░░░░░░  0.0/80G");
  EXPECT_EQ(MemoryBar(1, 81920, false), "█░░░░░░░  0.0/80G");
  EXPECT_EQ(MemoryBar(40960, 81920, false), "████░░░░ 40.0/80G");
  EXPECT_EQ(MemoryBar(81920, 81920, false), "████████ 80.0/80G");
  EXPECT_EQ(MemoryBar(81920, 81920, true), "\033[31m████████\033[0m 80.0/80G");
  EXPECT_EQ(MemoryBar(-1, 0, false), "-");
}

TEST(StatusViewTest, JsonHasCanhazgpuFieldsAndRicherOnes) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  auto json = StatusJson(Sample(now), now);
  ASSERT_EQ(json.size(), 3u);
  EXPECT_EQ(json[0]["status"], "AVAILABLE");
  EXPECT_EQ(json[0]["details"], "free for 0h 5m 0s");
  EXPECT_TRUE(json[0].contains("last_released"));
  EXPECT_EQ(json[1]["gpu_id"], 1);
  EXPECT_EQ(json[1]["user"], "alice");
  EXPECT_EQ(json[1]["type"], "MANUAL");
  EXPECT_EQ(json[1]["duration"], "1h 30m 0s");
  EXPECT_EQ(json[1]["validation"], "8452MiB, 1 process");
  EXPECT_EQ(json[1]["model"]["model"], "org/m");
  EXPECT_EQ(json[1]["model"]["provider"], "org");
  EXPECT_EQ(json[1]["note"], "<script>x</script>");
  EXPECT_EQ(json[1]["memory_used_mib"], 8452);
  EXPECT_EQ(json[1]["memory_total_mib"], 81559);
  EXPECT_EQ(json[1]["processes"][0]["pid"], 42);
  EXPECT_EQ(json[1]["processes"][0]["command"], "vllm serve org/m");
  EXPECT_EQ(json[1]["reserved_at"], "2026-09-21T12:43:20.000Z");
  EXPECT_EQ(json[1]["expires_at"], "2026-09-21T14:43:20.000Z");
  EXPECT_EQ(json[2]["status"], "UNRESERVED");
  EXPECT_EQ(json[2]["details"], "WITHOUT RESERVATION");
  EXPECT_EQ(json[2]["unreserved_users"][0], "bob");
  EXPECT_EQ(json[2]["process_info"], "2048MiB used by 1 process");
}

TEST(StatusViewTest, FormatsUserLists) {
  EXPECT_EQ(FormatUserList({}), "unknown");
  EXPECT_EQ(FormatUserList({"a", "b"}), "a and b");
  EXPECT_EQ(FormatUserList({"a", "b", "c", "d"}), "a, b and 2 more");
}

}  // namespace
}  // namespace canhazgpu::cli
