#include "gpu/fake_host.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace canhazgpu::gpu {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(std::string_view json) {
  auto host = ParseFakeHost(json, "h.json");
  return host.ok() ? "" : std::string(host.status().message());
}

TEST(FakeHostTest, ParsesRequiredAndDefaultFields) {
  auto host = ParseFakeHost(R"({"gpus": [
      {"name": "NVIDIA A100", "uuid": "GPU-a", "memory_total_mib": 40960,
       "processes": [{"pid": 10, "used_memory_mib": 2048}], "memory_reserved_mib": 100},
      {"name": "NVIDIA A100", "uuid": "GPU-b", "memory_total_mib": 40960, "mig_mode": "enabled",
       "pci_bus_id": "0000:81:00.0", "compute_capability": "8.0", "error": "fell off the bus"}]})",
                            "h.json");
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_EQ(host->gpus.size(), 2u);
  const GpuInfo& a = host->gpus[0];
  EXPECT_EQ(a.index, 0);
  EXPECT_EQ(a.memory_total_bytes, 40960 * kMiB);
  EXPECT_EQ(a.memory_used_bytes, (2048 + 100) * kMiB);
  ASSERT_EQ(a.processes.size(), 1u);
  EXPECT_EQ(a.processes[0].pid, 10);
  EXPECT_EQ(a.pci_bus_id, "0000:01:00.0");
  EXPECT_EQ(a.mig_mode, MigMode::kDisabled);
  EXPECT_EQ(a.driver_version, "550.54.15");
  const GpuInfo& b = host->gpus[1];
  EXPECT_EQ(b.index, 1);
  EXPECT_TRUE(b.processes.empty());
  EXPECT_EQ(b.mig_mode, MigMode::kEnabled);
  EXPECT_EQ(b.pci_bus_id, "0000:81:00.0");
  EXPECT_EQ(b.compute_capability, "8.0");
  EXPECT_EQ(b.error, "fell off the bus");
}

// The health fields the test libnvidia-ml.so simulates (docs/fake-host.md).
TEST(FakeHostTest, ParsesHealthFields) {
  auto host = ParseFakeHost(R"({"gpus": [
      {"name": "A", "uuid": "GPU-a", "memory_total_mib": 1},
      {"name": "B", "uuid": "GPU-b", "memory_total_mib": 1, "xid_events": [79, 13],
       "lost": true, "retired_pages_pending": true, "events_supported": false}]})",
                            "h.json");
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_EQ(host->health.size(), 2u);
  EXPECT_EQ(host->health[0], FakeGpuHealth{});
  EXPECT_TRUE(host->health[0].events_supported);
  EXPECT_EQ(host->health[1], (FakeGpuHealth{{79, 13}, true, true, false}));
  EXPECT_THAT(ErrorOf(R"({"gpus": [{"name": "A", "uuid": "a", "memory_total_mib": 1,
                                    "xid_events": [0]}]})"),
              HasSubstr("field 'xid_events': entry 0 must be an integer from 1 to 65535"));
  EXPECT_THAT(ErrorOf(R"({"gpus": [{"name": "A", "uuid": "a", "memory_total_mib": 1,
                                    "xid_events": [79, "13"]}]})"),
              HasSubstr("entry 1 must be an integer"));
  EXPECT_THAT(ErrorOf(R"({"gpus": [{"name": "A", "uuid": "a", "memory_total_mib": 1,
                                    "lost": 1}]})"),
              HasSubstr("field 'lost': expected true or false"));
}

TEST(FakeHostTest, RejectsUnknownFieldsNamingThem) {
  EXPECT_THAT(ErrorOf(R"({"gpus": [{"name": "x", "uuid": "u", "memory_total_mib": 1,
                                     "memroy": 2}]})"),
              HasSubstr("fake host h.json: gpus[0]: unknown field 'memroy'"));
  EXPECT_THAT(ErrorOf(R"({"gpus": [], "extra": 1})"), HasSubstr("unknown field 'extra'"));
  EXPECT_THAT(ErrorOf(R"({"gpus": [{"name": "x", "uuid": "u", "memory_total_mib": 1,
                                     "processes": [{"pid": 1, "used_memory_mib": 1, "x": 0}]}]})"),
              HasSubstr("gpus[0]: processes[0]: unknown field 'x'"));
}

TEST(FakeHostTest, RejectsMalformedInput) {
  EXPECT_THAT(ErrorOf("{"), HasSubstr("not valid JSON"));
  EXPECT_THAT(ErrorOf("[]"), HasSubstr("expected a JSON object"));
  EXPECT_THAT(ErrorOf("{}"), HasSubstr("field 'gpus': is required"));
  EXPECT_THAT(ErrorOf(R"({"gpus": [{"uuid": "u", "memory_total_mib": 1}]})"),
              HasSubstr("gpus[0]: field 'name': is required"));
  EXPECT_THAT(ErrorOf(R"({"gpus": [{"name": "x", "uuid": "u", "memory_total_mib": "big"}]})"),
              HasSubstr("field 'memory_total_mib': expected an integer"));
  EXPECT_THAT(ErrorOf(R"({"gpus": [{"name": "x", "uuid": "u", "memory_total_mib": 0}]})"),
              HasSubstr("must be from 1 to"));
  EXPECT_THAT(ErrorOf(R"({"gpus": [{"name": "x", "uuid": "u", "memory_total_mib": 1,
                                     "processes": [{"pid": -4, "used_memory_mib": 1}]}]})"),
              HasSubstr("field 'pid': must be from 1 to"));
  EXPECT_THAT(ErrorOf(R"({"gpus": [{"name": "x", "uuid": "u", "memory_total_mib": 1},
                                   {"name": "x", "uuid": "u", "memory_total_mib": 1}]})"),
              HasSubstr("duplicate uuid 'u'"));
  EXPECT_THAT(ErrorOf(R"({"gpus": [{"name": "x", "uuid": "u", "memory_total_mib": 1,
                                     "mig_mode": "on"}]})"),
              HasSubstr("field 'mig_mode'"));
}

// ---- Bounds (issue 14): a hostile simulated host is an error, quickly. ----

std::string Gpu(const std::string& extra) {
  return R"({"gpus": [{"name": "x", "uuid": "u", "memory_total_mib": 81920)" + extra + "}]}";
}

TEST(FakeHostTest, Issue14HugeMigSliceCountIsRejected) {
  EXPECT_THAT(ErrorOf(Gpu(R"(, "mig_memory_slices": 2147483647)")),
              HasSubstr("gpus[0]: field 'mig_memory_slices': must be from 0 to 64"));
}

TEST(FakeHostTest, Issue14TooManyProcessesIsRejected) {
  std::string processes;
  for (int i = 0; i < 1025; ++i) {
    processes += (i ? "," : "") + std::string(R"({"pid": )") + std::to_string(i + 1) +
                 R"(, "used_memory_mib": 1})";
  }
  EXPECT_THAT(ErrorOf(Gpu(R"(, "processes": [)" + processes + "]")),
              HasSubstr("gpus[0]: field 'processes': more than 1024 entries"));
}

TEST(FakeHostTest, Issue14TooManyProcessesOnTheHostIsRejected) {
  std::string processes;
  for (int i = 0; i < 1000; ++i) {
    processes += (i ? "," : "") + std::string(R"({"pid": )") + std::to_string(i + 1) +
                 R"(, "used_memory_mib": 1})";
  }
  std::string gpus;
  for (int g = 0; g < 5; ++g) {
    gpus += (g ? "," : "") + std::string(R"({"name": "x", "uuid": "u)") + std::to_string(g) +
            R"(", "memory_total_mib": 1, "processes": [)" + processes + "]}";
  }
  EXPECT_THAT(ErrorOf(R"({"gpus": [)" + gpus + "]}"),
              HasSubstr("field 'gpus': more than 4096 processes in all"));
}

TEST(FakeHostTest, Issue14TooManyGpusIsRejected) {
  std::string text = DefaultFakeHostJson(1025);
  EXPECT_THAT(ErrorOf(text), HasSubstr("field 'gpus': more than 1024 entries"));
  EXPECT_TRUE(ParseFakeHost(DefaultFakeHostJson(1024), "h.json").ok());
}

TEST(FakeHostTest, Issue14EveryNumberIsRangeChecked) {
  EXPECT_THAT(ErrorOf(R"({"gpus": [{"name": "x", "uuid": "u", "memory_total_mib": 1e30}]})"),
              HasSubstr("field 'memory_total_mib': expected an integer"));
  EXPECT_THAT(ErrorOf(Gpu("").replace(Gpu("").find("81920"), 5, "17592186044416")),
              HasSubstr("field 'memory_total_mib': must be from 1 to 16777216"));
  EXPECT_THAT(ErrorOf(Gpu(R"(, "memory_reserved_mib": 9223372036854775807)")),
              HasSubstr("field 'memory_reserved_mib': must be from 0 to 16777216"));
  EXPECT_THAT(ErrorOf(Gpu(R"(, "minor": 4294967296)")),
              HasSubstr("field 'minor': must be from 0 to 1048575"));
  EXPECT_THAT(
      ErrorOf(Gpu(R"(, "processes": [{"pid": 9223372036854775807, "used_memory_mib": 1}])")),
      HasSubstr("processes[0]: field 'pid': must be from 1 to 4194304"));
  EXPECT_THAT(
      ErrorOf(Gpu(R"(, "processes": [{"pid": 1, "used_memory_mib": 18446744073709551615}])")),
      HasSubstr("field 'used_memory_mib': must be from 0 to 16777216"));
  EXPECT_THAT(ErrorOf(Gpu(R"(, "mig_mode": "enabled", "mig_instances": [{"uuid": "m",
      "profile": "1g", "profile_id": 0, "placement_start": 9223372036854775807,
      "placement_size": 9223372036854775807, "memory_mib": 1}])")),
              HasSubstr("field 'placement_start': must be from 0 to 7"));
  EXPECT_THAT(ErrorOf(Gpu(R"(, "mig_mode": "enabled", "mig_instances": [
      {"uuid": "m1", "profile": "1g", "profile_id": 0, "placement_start": 0, "placement_size": 1,
       "memory_mib": 1, "gpu_instance_id": 5},
      {"uuid": "m2", "profile": "1g", "profile_id": 0, "placement_start": 1, "placement_size": 1,
       "memory_mib": 1, "gpu_instance_id": 5}])")),
              HasSubstr("instance 1 repeats gpu_instance_id 5"));
  EXPECT_THAT(ErrorOf(Gpu(R"(, "mig_mode": "enabled", "mig_instances": [{"uuid": "m",
      "profile": "1g", "profile_id": 0, "placement_start": 0, "placement_size": 1,
      "memory_mib": 1, "compute_instance_id": 1024}])")),
              HasSubstr("field 'compute_instance_id': must be from 0 to 1023"));
  EXPECT_THAT(ErrorOf(Gpu(R"(, "name": ")" + std::string(2000, 'n') + R"(")")),
              HasSubstr("gpus[0]: field 'name': longer than 1024 bytes"));
}

TEST(FakeHostTest, Issue14UnusualFilesAreRejected) {
  EXPECT_THAT(LoadFakeHost("/dev/zero").status().message(),
              HasSubstr("fake host /dev/zero: not a regular file"));
  char tmpl[] = "/tmp/fake_host_test.XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string fifo = dir + "/fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(LoadFakeHost(fifo).status().message(), HasSubstr("not a regular file"));
  std::string big = dir + "/big.json";
  std::ofstream(big) << DefaultFakeHostJson(1) << std::string(4 << 20, ' ');
  EXPECT_THAT(LoadFakeHost(big).status().message(), HasSubstr(big + ": larger than 4194304 bytes"));
  std::filesystem::remove_all(dir);
}

TEST(FakeHostTest, DefaultHostRoundTrips) {
  auto host = ParseFakeHost(DefaultFakeHostJson(3), "default");
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_EQ(host->gpus.size(), 3u);
  EXPECT_EQ(host->gpus[2].product_name, "NVIDIA H100 80GB HBM3");
  EXPECT_NE(host->gpus[0].uuid, host->gpus[1].uuid);
}

TEST(FakeGpuProviderTest, RereadsTheFileOnEveryQuery) {
  char tmpl[] = "/tmp/fake_host_test.XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string path = dir + "/host.json";
  ASSERT_TRUE(WriteDefaultFakeHost(path, 2).ok());
  FakeGpuProvider provider(path);
  auto first = provider.Query();
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE((*first)[0].processes.empty());

  std::ofstream(path) << R"({"gpus": [{"name": "x", "uuid": "u", "memory_total_mib": 100,
                             "processes": [{"pid": 77, "used_memory_mib": 50}]}]})";
  auto second = provider.Query();
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].processes[0].pid, 77);

  std::filesystem::remove(path);
  EXPECT_EQ(provider.Query().status().code(), absl::StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace canhazgpu::gpu
