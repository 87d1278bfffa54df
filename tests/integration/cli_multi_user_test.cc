// Several local users on one host (tests/integration/multi_user.h): what one
// user does must not harm another's reservations.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "integration/multi_user.h"

namespace canhazgpu::testing {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;

class CliMultiUserTest : public MultiUserTest {
 protected:
  void SetUp() override {
    MultiUserTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    CliResult admin = AsRoot({"admin", "--provider", "fake", "--gpus", "4"});
    ASSERT_EQ(admin.exit_code, 0) << admin.err;
  }

  json Status() {
    CliResult r = AsRoot({"status", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
};

TEST_F(CliMultiUserTest, EachUserReservesUnderTheirOwnName) {
  CliResult alice = AsAlice({"reserve", "-G", "1"});
  ASSERT_EQ(alice.exit_code, 0) << alice.err;
  CliResult bob = AsBob({"reserve", "-G", "2"});
  ASSERT_EQ(bob.exit_code, 0) << bob.err;
  json status = Status();
  EXPECT_EQ(status[1]["user"], "chgtest_alice");
  EXPECT_EQ(status[2]["user"], "chgtest_bob");
  CliResult steal = AsBob({"release", "-G", "1"});
  EXPECT_EQ(steal.exit_code, 1);
  EXPECT_THAT(steal.err, HasSubstr("gpu 1 is reserved by chgtest_alice"));
}

}  // namespace
}  // namespace canhazgpu::testing
