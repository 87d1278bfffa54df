// reserve / run by what the GPU is (--where, --min-memory, --product, --mig)
// on a simulated host with an A100 in MIG mode, an H100 and a plain A100:
// the right GPUs, what the job sees, the queue waiting for a matching GPU,
// and requests no GPU here could ever serve refused at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "integration/cli_runner.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kHost[] =
    R"({"driver_version": "550.54.15", "cuda_driver_version": "12.4", "gpus": [
  {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-a", "memory_total_mib": 40960, "compute_capability": "8.0",
   "mig_mode": "enabled", "mig_instances": [
     {"uuid": "MIG-1", "profile": "1g.5gb", "profile_id": 19, "placement_start": 0, "placement_size": 1, "memory_mib": 4864},
     {"uuid": "MIG-2", "profile": "3g.20gb", "profile_id": 9, "placement_start": 4, "placement_size": 4, "memory_mib": 19968}]},
  {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-b", "memory_total_mib": 81920, "compute_capability": "9.0"},
  {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-c", "memory_total_mib": 40960, "compute_capability": "8.0"}]})";

class CliSelectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mkdir((host_.dir() + "/state").c_str(), 0755);
    WriteFile(host_.fake_host(), kHost);
    CliResult admin = host_.Run({"admin", "--provider", "fake"});
    ASSERT_EQ(admin.exit_code, 0) << admin.err;
  }
  json Status() { return json::parse(host_.Run({"status", "--json"}).out); }
  int Reserved() {
    int n = 0;
    for (const json& g : Status()) n += g["status"] == "IN_USE";
    return n;
  }
  CliHost host_;
};

TEST_F(CliSelectTest, RunGetsAGpuThatMatchesAndShowsTheJobOnlyIt) {
  CliResult big = host_.Run(
      {"run", "--min-memory", "41Gi", "--", "sh", "-c", "printf %s \"$CUDA_VISIBLE_DEVICES\""});
  ASSERT_EQ(big.exit_code, 0) << big.err;
  EXPECT_EQ(big.out, "1");
  CliResult hopper =
      host_.Run({"run", "--where",
                 "device.attributes[\"gpu.canhazgpu.dev\"].cudaComputeCapability.isGreaterThan("
                 "semver(\"8.0.0\"))",
                 "--", "sh", "-c", "printf %s \"$CUDA_VISIBLE_DEVICES\""});
  ASSERT_EQ(hopper.exit_code, 0) << hopper.err;
  EXPECT_EQ(hopper.out, "1");
}

// Issue 32: a second --where was refused ("given more than once"); every
// selector must hold, the first as much as the last.
TEST_F(CliSelectTest, EveryWhereGivenMustHold) {
  CliResult r =
      host_.Run({"run", "--where",
                 "device.attributes[\"gpu.canhazgpu.dev\"].cudaComputeCapability.isGreaterThan("
                 "semver(\"8.0.0\"))",
                 "--where", "device.attributes[\"gpu.canhazgpu.dev\"].type == \"gpu\"", "--", "sh",
                 "-c", "printf %s \"$CUDA_VISIBLE_DEVICES\""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1");
}

TEST_F(CliSelectTest, MigRequestShowsTheJobTheInstance) {
  CliResult r = host_.Run(
      {"run", "--mig", "3g.20gb", "--", "sh", "-c", "printf %s \"$CUDA_VISIBLE_DEVICES\""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "MIG-2");
  CliResult reserve = host_.Run({"reserve", "--mig", "1g.5gb", "--short"});
  ASSERT_EQ(reserve.exit_code, 0) << reserve.err;
  EXPECT_EQ(reserve.out, "MIG-1");
  EXPECT_EQ(Status()[0]["status"], "IN_USE") << "the parent GPU is reserved";
  EXPECT_EQ(Reserved(), 1);
}

TEST_F(CliSelectTest, ProductMatchesAnyCaseAndShortagesCountOnlyMatchingGpus) {
  CliResult two = host_.Run({"reserve", "--product", "a100", "-g", "2", "--short"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out, "0,2");
  CliResult more = host_.Run({"reserve", "--product", "A100", "--nonblock"});
  EXPECT_EQ(more.exit_code, 3) << more.err;
  EXPECT_THAT(more.err, HasSubstr("requested 1, 0 free of 2 matching (2 reserved)"));
  // The H100 is still free for anyone else.
  CliResult any = host_.Run({"reserve", "--short"});
  ASSERT_EQ(any.exit_code, 0) << any.err;
  EXPECT_EQ(any.out, "1");
}

TEST_F(CliSelectTest, QueueWaitsForAMatchingGpu) {
  ASSERT_EQ(host_.Run({"reserve", "--product", "h100"}).exit_code, 0);
  int waiter = host_.Spawn({"reserve", "--min-memory", "80Gi", "--note", "needs-80"});
  ASSERT_TRUE(Eventually([&] {
    json q = json::parse(host_.Run({"queue", "--json"}).out);
    return q["total_waiting"] == 1;
  }));
  json q = json::parse(host_.Run({"queue", "--json"}).out);
  EXPECT_EQ(q["entries"][0]["selector"], "--min-memory 80Gi");
  EXPECT_TRUE(q["entries"][0]["held_gpus"].empty()) << "free A100s do not match";
  EXPECT_THAT(host_.Run({"queue"}).out, HasSubstr("1 GPU(s) --min-memory 80Gi"));
  ASSERT_EQ(host_.Run({"release"}).exit_code, 0);
  EXPECT_EQ(ExitCodeOf(waiter), 0);
  EXPECT_EQ(Status()[1]["note"], "needs-80");
}

TEST_F(CliSelectTest, RequestsNoGpuHereCanServeFailAtOnceWithTheExplanation) {
  CliResult v100 = host_.Run({"reserve", "--product", "v100", "--min-memory", "16Gi"});
  EXPECT_EQ(v100.exit_code, 2);
  EXPECT_THAT(v100.err, HasSubstr("no 1 GPU(s) on this host can ever match --min-memory 16Gi "
                                  "--product 'v100': 0 of 3 GPUs do"));
  EXPECT_THAT(v100.err, HasSubstr("selector rejected 3: device.attributes"));
  CliResult four = host_.Run({"run", "-g", "3", "--product", "a100", "--", "true"});
  EXPECT_EQ(four.exit_code, 2);
  EXPECT_THAT(four.err, HasSubstr("2 of 3 GPUs do"));
  CliResult missing = host_.Run(
      {"reserve", "--where", "device.attributes[\"gpu.canhazgpu.dev\"].profile == \"x\""});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("has("));
  EXPECT_EQ(Reserved(), 0);
  EXPECT_EQ(json::parse(host_.Run({"queue", "--json"}).out)["total_waiting"], 0);
}

TEST_F(CliSelectTest, BadFlagValuesAreOneLineAndChangeNothing) {
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"reserve", "--min-memory", "40GB"},
                                             {"reserve", "--product", ""},
                                             {"reserve", "--where", "device.attributes["},
                                             {"reserve", "--where", "1 + 1"},
                                             {"reserve", "-G", "1", "--product", "a100"},
                                             {"run", "--mig", "", "--", "true"}}) {
    CliResult r = host_.Run(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << " " << args[2] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(Reserved(), 0);
}

// A 10 KiB selector over many lines with an error near its end: one short
// line quoting the expression around the error, newlines escaped.
TEST_F(CliSelectTest, ErrorsInLongSelectorsQuoteABoundedExcerpt) {
  std::string where;
  while (where.size() < 10000) where += "device.driver != 'x' &&\n";
  CliResult r = host_.Run({"reserve", "--where", where + "device.nope"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_LT(r.err.size(), 300u) << r.err;
  EXPECT_THAT(r.err, HasSubstr("undefined field 'nope'"));
  EXPECT_THAT(r.err, HasSubstr("&&\\ndevice.nope')"));
  EXPECT_EQ(Reserved(), 0);
}

}  // namespace
}  // namespace canhazgpu::testing
