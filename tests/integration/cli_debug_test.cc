// `canhazgpu debug cel-conformance`: the runner CI uses over
// shared/cel-conformance, on case files written here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "integration/cli_runner.h"

namespace canhazgpu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPassing[] =
    R"({"file":"t","section":"s","name":"add","expr":"1 + 2","bindings":{},"expect":{"value":{"int":"3"}},"skip_reason":null})"
    "\n"
    R"({"file":"t","section":"s","name":"skip","expr":"x","bindings":{},"expect":{"value":{"int":"3"}},"skip_reason":"needs protobuf"})"
    "\n";
constexpr char kFailing[] =
    R"({"file":"t","section":"s","name":"wrong","expr":"'a' + 'b'","bindings":{},"expect":{"value":{"string":"ba"}},"skip_reason":null})"
    "\n"
    R"({"file":"dra","section":"d","name":"bad_field","expr":"device.nope","bindings":{"device":{"dra_device":{"driver":"x.dev"}}},"expect":{"compile_error":true},"skip_reason":null})"
    "\n";

class CliDebugTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cases_ = host_.dir() + "/cases";
    mkdir(cases_.c_str(), 0755);
    WriteFile(cases_ + "/a.jsonl", kPassing);
    WriteFile(cases_ + "/b.jsonl", kFailing);
  }
  CliHost host_;
  std::string cases_;
};

TEST_F(CliDebugTest, OneLinePerFileThenTotalsAndExitZeroWithFailures) {
  CliResult r = host_.Run({"debug", "cel-conformance", cases_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, cases_ + "/a.jsonl: 1 passed, 0 failed, 1 skipped\n" + cases_ +
                       "/b.jsonl: 1 passed, 1 failed, 0 skipped\n"
                       "total: 2 passed, 1 failed, 1 skipped\n");
}

TEST_F(CliDebugTest, VerboseListsEachFailureWithExpectedAndActual) {
  CliResult r = host_.Run({"debug", "cel-conformance", "--verbose", cases_ + "/b.jsonl"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("FAIL t/s/wrong"));
  EXPECT_THAT(r.out, HasSubstr("expected: \"ba\" (string)"));
  EXPECT_THAT(r.out, HasSubstr("actual:   \"ab\" (string)"));
  EXPECT_THAT(r.out, Not(HasSubstr("bad_field")));
}

TEST_F(CliDebugTest, BadInputIsOneLineAndExitTwo) {
  CliResult missing = host_.Run({"debug", "cel-conformance", cases_ + "/nope.jsonl"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("no such file or directory"));
  WriteFile(cases_ + "/c.jsonl", "this is not json\n");
  CliResult garbage = host_.Run({"debug", "cel-conformance", cases_ + "/c.jsonl"});
  EXPECT_EQ(garbage.exit_code, 2);
  EXPECT_THAT(garbage.err, HasSubstr("c.jsonl:1: not a conformance case"));
  EXPECT_EQ(host_.Run({"debug", "nothing"}).exit_code, 2);
  EXPECT_EQ(host_.Run({"debug", "cel-conformance"}).exit_code, 2);
}

// What is read is bounded: a device or a FIFO is refused without reading
// it (/dev/zero used to be read forever), and so is a file past 16 MiB.
TEST_F(CliDebugTest, OnlyRegularCaseFilesOfBoundedSizeAreRead) {
  CliResult zero = host_.Run({"debug", "cel-conformance", "/dev/zero"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_THAT(zero.err, HasSubstr("/dev/zero: not a regular file"));
  EXPECT_EQ(std::count(zero.err.begin(), zero.err.end(), '\n'), 1) << zero.err;
  const std::string fifo = cases_ + "/fifo.jsonl";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  CliResult pipe = host_.Run({"debug", "cel-conformance", fifo});
  EXPECT_EQ(pipe.exit_code, 2);
  EXPECT_THAT(pipe.err, HasSubstr("fifo.jsonl: not a regular file"));
  const std::string big = host_.dir() + "/big.jsonl";
  WriteFile(big, "");
  ASSERT_EQ(truncate(big.c_str(), 17 << 20), 0);  // sparse: no disk used
  CliResult huge = host_.Run({"debug", "cel-conformance", big});
  EXPECT_EQ(huge.exit_code, 2);
  EXPECT_THAT(huge.err, HasSubstr("big.jsonl: more than 16 MiB"));
}

}  // namespace
}  // namespace canhazgpu::testing
