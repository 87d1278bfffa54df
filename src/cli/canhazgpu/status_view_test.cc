// Golden tests for the status table and JSON.
#include "cli/canhazgpu/status_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "cli/common/table.h"
#include "core/json_text.h"
#include "core/strings.h"

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
  EXPECT_EQ(
      RenderStatusTable(Sample(now), now, false),
      "GPU │ STATUS       │ USER  │ DURATION  │ TYPE   │ DETAILS                   │ "
      "VALIDATION         │ MODEL │ NOTE               │ PRODUCT        │ MEMORY\n"
      "────┼──────────────┼───────┼───────────┼────────┼───────────────────────────┼─"
      "───────────────────┼───────┼────────────────────┼────────────────┼──────────────────\n"
      "0   │ ● AVAILABLE  │ -     │ -         │ -      │ free for 0h 5m 0s         │ "
      "0MiB used          │ -     │ -                  │ H100 80GB HBM3 │ ░░░░░░░░  0.0/80G\n"
      "1   │ ● IN_USE     │ alice │ 1h 30m 0s │ MANUAL │ expires in 0h 30m 0s      │ "
      "8452MiB, 1 process │ org/m │ <script>x</script> │ H100 80GB HBM3 │ █░░░░░░░  8.3/80G\n"
      "2   │ ⚠ UNRESERVED │ bob   │ -         │ -      │ 2048MiB used by 1 process │ "
      "-                  │ -     │ -                  │ H100 80GB HBM3 │ █░░░░░░░  2.0/80G\n");
}

// The Go tool's columns keep their positions (scripts cut them by number):
// GPU to VALIDATION always, MODEL only when a GPU has one, then NOTE.
TEST(StatusViewTest, TheGoToolsColumnsComeFirstInItsOrder) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  alloc::HostStatus status = Sample(now);
  for (alloc::GpuStatus& g : status.gpus) g.model.reset();
  status.gpus[1].processes[0].model.reset();
  const std::string table = RenderStatusTable(status, now, false);
  EXPECT_THAT(table, StartsWith("GPU │ STATUS       │ USER  │ DURATION  │ TYPE   │ DETAILS  "
                                "                 │ VALIDATION         │ NOTE  "));
}

// A long `run` command, a long note: what a terminal of 80, 100 and 120
// columns shows.
alloc::HostStatus Crowded(TimePoint now) {
  alloc::HostStatus status = Sample(now);
  alloc::GpuStatus& run = status.gpus[0];
  run.state = alloc::GpuState::kInUse;
  run.reservation = Reservation{.gpu = 0,
                                .uid = 1000,
                                .user = "carol",
                                .kind = ReservationKind::kRun,
                                .start = now - minutes(3),
                                .process = ProcessRef{.pid = 31337},
                                .note = "sweep 4 of 12, ask carol before killing",
                                .command = "python train.py --config big.yaml --lr 3e-4"};
  return status;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  for (std::string_view line : Split(text, '\n', /*skip_empty=*/true)) lines.emplace_back(line);
  return lines;
}

TEST(StatusViewTest, NarrowTerminalsCutDetailsAndNoteBeforeDroppingWholeColumns) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  const auto json = StatusJson(Crowded(now), now);
  std::map<size_t, std::string> tables;
  for (size_t width : {80, 100, 120}) {
    tables[width] = RenderStatusTable(json, {.width = width});
    for (const std::string& line : Lines(tables[width])) {
      EXPECT_LE(DisplayWidth(line), width) << tables[width];
    }
    EXPECT_THAT(Lines(tables[width])[0],
                StartsWith("GPU │ STATUS       │ USER  │ DURATION  │ TYPE   │ DETAILS"))
        << width << " columns:\n"
        << tables[width];
    EXPECT_THAT(tables[width], HasSubstr("│ 0h 3m 0s  │ RUN    │ pid 31337: python"));
    EXPECT_THAT(Lines(tables[width])[0], HasSubstr("│ NOTE")) << tables[width];
  }
  // 80: the long details and the note are cut, with an ellipsis.
  EXPECT_THAT(tables[80], HasSubstr("… │ sweep"));
  EXPECT_THAT(tables[80], Not(HasSubstr("VALIDATION")));
  EXPECT_THAT(tables[80], Not(HasSubstr("MEMORY")));
  // 100: room for the model too; 120: and for VALIDATION.
  EXPECT_THAT(tables[100], HasSubstr("│ org/m │"));
  EXPECT_THAT(tables[120], HasSubstr("│ 8452MiB, 1 process │"));
  // Without a terminal (a pipe, a script): everything, uncut.
  const std::string full = RenderStatusTable(json, {.width = 0});
  EXPECT_THAT(full, HasSubstr("sweep 4 of 12, ask carol before killing │ H100"));
  EXPECT_THAT(full, Not(HasSubstr("…")));
}

TEST(StatusViewTest, AVeryNarrowTerminalStillShowsWhoHasWhat) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  const std::string table = RenderStatusTable(StatusJson(Crowded(now), now), {.width = 40});
  for (const std::string& line : Lines(table)) EXPECT_LE(DisplayWidth(line), 40u) << table;
  EXPECT_THAT(table, StartsWith("GPU │ STATUS       │ USER"));
  EXPECT_THAT(table, HasSubstr("carol"));
}

TEST(StatusViewTest, MemoryBar) {
  EXPECT_EQ(MemoryBar(0, 81920, false).text, "░░░░░░░░  0.0/80G");
  EXPECT_EQ(MemoryBar(1, 81920, false).text, "█░░░░░░░  0.0/80G");
  EXPECT_EQ(MemoryBar(40960, 81920, false).text, "████░░░░ 40.0/80G");
  EXPECT_EQ(MemoryBar(81920, 81920, false).text, "████████ 80.0/80G");
  EXPECT_TRUE(MemoryBar(81920, 81920, false).style.start.empty());
  EXPECT_EQ(MemoryBar(81920, 81920, true).text, "████████ 80.0/80G");
  EXPECT_EQ(MemoryBar(81920, 81920, true).style.start, "\033[31m");
  EXPECT_EQ(MemoryBar(1, 81920, true).style.start, "\033[32m");
  EXPECT_EQ(MemoryBar(-1, 0, false).text, "-");
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

// Issue 14: other users' notes and commands, as bytes.
alloc::HostStatus Hostile(TimePoint now) {
  alloc::HostStatus status = Sample(now);
  status.gpus[1].reservation->note = "caf\xe9 \x1b]0;pwned\x07\x1b[2J";
  alloc::GpuStatus run{.gpu = 3, .state = alloc::GpuState::kInUse};
  run.reservation = Reservation{.gpu = 3,
                                .uid = 1001,
                                .user = "bob",
                                .kind = ReservationKind::kRun,
                                .start = now - minutes(1),
                                .process = ProcessRef{77, 1},
                                .command = "sh -c 'sleep 5\nrm -rf x' x\xff\xe2\x80\xae"};
  status.gpus.push_back(run);
  return status;
}

TEST(StatusViewTest, TableShowsControlsAndInvalidBytesEscapedOnOneLinePerGpu) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  for (bool color : {false, true}) {
    std::string table = RenderStatusTable(Hostile(now), now, color);
    EXPECT_THAT(table, HasSubstr("caf\\xe9 \\e]0;pwned\\a\\e[2J"));
    EXPECT_THAT(table, HasSubstr("pid 77: sh -c 'sleep 5\\nrm -rf x' x\\xff\\u202e"));
    EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2 + 4) << "header, rule, 4 GPUs";
    // The only escape sequences left are the table's own colours.
    EXPECT_THAT(table, Not(HasSubstr("\x1b]")));
    EXPECT_THAT(table, Not(HasSubstr("\x1b[2J")));
    EXPECT_THAT(table, Not(HasSubstr("\xe2\x80\xae")));
    EXPECT_EQ(EscapeInvalidUtf8(table), table) << "valid UTF-8";
    if (!color) {
      EXPECT_EQ(table.find('\x1b'), std::string::npos);
    }
  }
}

// A GPU prepared for a Kubernetes claim: type K8S, the pod's user, and the
// claim in DETAILS and in the JSON.
TEST(StatusViewTest, K8sReservationShowsItsClaim) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  alloc::HostStatus status = Sample(now);
  alloc::GpuStatus k8s{.gpu = 3, .state = alloc::GpuState::kInUse};
  k8s.reservation =
      Reservation{.gpu = 3,
                  .uid = 1000,
                  .user = "alice",
                  .kind = ReservationKind::kK8s,
                  .start = now - minutes(10),
                  .claim = KubeClaimRef{
                      .namespace_name = "ml", .name = "train", .uid = "u-1", .pod = "train-0"}};
  status.gpus.push_back(k8s);
  std::string table = RenderStatusTable(status, now, false);
  // The pod's author writes its user label: shown as a claim.
  EXPECT_THAT(table, HasSubstr("3   │ ● IN_USE     │ alice (from label) │ 0h 10m 0s │ K8S    │"));
  EXPECT_THAT(table, HasSubstr("Kubernetes claim ml/train (pod train-0)"));
  auto json = StatusJson(status, now);
  EXPECT_EQ(json[3]["type"], "K8S");
  EXPECT_EQ(json[3]["user"], "alice");
  EXPECT_EQ(json[3]["user_source"], "pod label");
  EXPECT_FALSE(json[1].contains("user_source"));
  EXPECT_EQ(json[3]["details"], "Kubernetes claim ml/train (pod train-0)");
  EXPECT_EQ(json[3]["claim"],
            (nlohmann::ordered_json{
                {"namespace", "ml"}, {"name", "train"}, {"uid", "u-1"}, {"pod", "train-0"}}));
  EXPECT_FALSE(json[3].contains("expires_at"));
  EXPECT_FALSE(json[1].contains("claim")) << "only k8s reservations name a claim";
  // Unknown pod: the claim alone.
  status.gpus[3].reservation->claim->pod = "";
  EXPECT_EQ(StatusJson(status, now)[3]["details"], "Kubernetes claim ml/train");
}

// --user: the Go tool's "actual (display)" in the USER cell, and
// display_user beside user in JSON; none when not given or the same.
TEST(StatusViewTest, DisplayUserShownBesideTheRealOne) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  alloc::HostStatus status = Sample(now);
  status.gpus[1].reservation->display_user = "team-eval";
  EXPECT_THAT(RenderStatusTable(status, now, false), HasSubstr("│ alice (team-eval) │"));
  auto json = StatusJson(status, now);
  EXPECT_EQ(json[1]["user"], "alice");
  EXPECT_EQ(json[1]["display_user"], "team-eval");
  EXPECT_FALSE(json[0].contains("display_user"));
  status.gpus[1].reservation->display_user = "alice";
  EXPECT_THAT(RenderStatusTable(status, now, false), Not(HasSubstr("alice (")));
}

TEST(StatusViewTest, LongCommandIsCutBetweenCharacters) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  alloc::HostStatus status = Hostile(now);
  status.gpus[3].reservation->command = std::string(36, 'x') + "\xc3\xa9\xc3\xa9 and more";
  auto json = StatusJson(status, now);
  EXPECT_EQ(json[3]["details"], "pid 77: " + std::string(36, 'x') + "...");
}

TEST(StatusViewTest, JsonKeepsTheBytesAndDumpsAsValidUtf8) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  auto json = StatusJson(Hostile(now), now);
  EXPECT_EQ(json[1]["note"], "caf\xe9 \x1b]0;pwned\x07\x1b[2J");
  auto parsed = nlohmann::json::parse(DumpJson(json, 2));
  EXPECT_EQ(parsed[1]["note"], "caf\\xe9 \x1b]0;pwned\x07\x1b[2J");
  EXPECT_EQ(parsed[3]["command"], "sh -c 'sleep 5\nrm -rf x' x\\xff\xe2\x80\xae");
}

TEST(StatusViewTest, QueueJsonDumpsInvalidUtf8Escaped) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  alloc::QueueRow row{.position = 1,
                      .entry = QueueEntry{.id = 1,
                                          .uid = 1000,
                                          .user = "alice",
                                          .count = 1,
                                          .note = "caf\xe9",
                                          .command = "x\xff",
                                          .enqueued = now}};
  auto parsed = nlohmann::json::parse(DumpJson(QueueJson({row}, now)));
  EXPECT_EQ(parsed["entries"][0]["note"], "caf\\xe9");
  EXPECT_EQ(parsed["entries"][0]["command"], "x\\xff");
}

TEST(StatusViewTest, FormatsUserLists) {
  EXPECT_EQ(FormatUserList({}), "unknown");
  EXPECT_EQ(FormatUserList({"a", "b"}), "a and b");
  EXPECT_EQ(FormatUserList({"a", "b", "c", "d"}), "a, b and 2 more");
}

// A GPU shared by memory (ADR 0018): one row for the GPU, SHARED, its
// holders and what is left, readable in 100 columns; each share in JSON.
alloc::HostStatus SharedSample(TimePoint now) {
  alloc::HostStatus status = Sample(now);
  alloc::GpuStatus& g = status.gpus[1];
  auto share = [&](uint32_t uid, std::string user, uint64_t gib, int ago) {
    return Reservation{.gpu = 1,
                       .memory = gib << 30,
                       .share = user + "-id",
                       .shareable = (81559 - 512) * kMiB,
                       .uid = uid,
                       .user = std::move(user),
                       .start = now - minutes(ago),
                       .expires = now + minutes(60),
                       .note = "n"};
  };
  g.shares = {share(1000, "alice", 50, 90), share(1001, "bob", 24, 30)};
  g.reservation = g.shares[0];
  g.share_overuse = {"carol uses 2Gi without a share"};
  return status;
}

TEST(StatusViewTest, SharedGpuShowsItsSharesAndWhatIsLeft) {
  TimePoint now = FromEpochMillis(1'790'000'000'000);
  nlohmann::ordered_json json = StatusJson(SharedSample(now), now);
  const nlohmann::ordered_json& g = json[1];
  EXPECT_EQ(g["status"], "IN_USE");
  EXPECT_EQ(g["shared"], true);
  EXPECT_EQ(g["user"], "alice, bob");
  EXPECT_EQ(g["type"], "SHARED");
  EXPECT_EQ(g["details"], "5.1Gi of 79.1Gi left (alice 50Gi, bob 24Gi)");
  EXPECT_EQ(g["memory_left_bytes"], (81559 - 512 - 74 * 1024) * kMiB);
  EXPECT_EQ(g["validation"], "⚠ carol uses 2Gi without a share");
  EXPECT_FALSE(g.contains("note")) << "a share's note is in its share";
  ASSERT_EQ(g["shares"].size(), 2u);
  EXPECT_EQ(g["shares"][1]["user"], "bob");
  EXPECT_EQ(g["shares"][1]["memory"], "24Gi");
  EXPECT_EQ(g["shares"][1]["share_id"], "bob-id");
  EXPECT_EQ(g["shares"][1]["note"], "n");
  // Readable in 100 columns (no model, nobody over a share: the common case).
  alloc::HostStatus plain = SharedSample(now);
  plain.gpus[1].model.reset();
  plain.gpus[1].processes.clear();
  plain.gpus[1].share_overuse.clear();
  const std::string table = RenderStatusTable(StatusJson(plain, now), {.width = 100});
  EXPECT_THAT(table, HasSubstr("◐ SHARED"));
  EXPECT_THAT(table, HasSubstr("5.1Gi of 79.1Gi left (alice 50Gi, bob 24Gi)"));
  for (const std::string& line : Lines(table)) EXPECT_LE(DisplayWidth(line), 100u) << line;
}

}  // namespace
}  // namespace canhazgpu::cli
