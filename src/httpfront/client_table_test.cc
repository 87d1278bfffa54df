#include "httpfront/client_table.h"

#include <gtest/gtest.h>

namespace canhazgpu::httpfront {
namespace {

using Verdict = ClientTable::Verdict;

TEST(ClientTableTest, AClientAtItsCapIsRefusedAndOthersAreNot) {
  ClientTable table(/*per_client=*/2, /*total=*/10);
  EXPECT_EQ(table.Acquire("uid 1000"), Verdict::kAdmitted);
  EXPECT_EQ(table.Acquire("uid 1000"), Verdict::kAdmitted);
  EXPECT_EQ(table.Acquire("uid 1000"), Verdict::kOverClientCap);
  EXPECT_EQ(table.Acquire("uid 1001"), Verdict::kAdmitted);
  EXPECT_EQ(table.Acquire("10.0.0.5"), Verdict::kAdmitted);
  table.Release("uid 1000");
  EXPECT_EQ(table.Acquire("uid 1000"), Verdict::kAdmitted);
}

TEST(ClientTableTest, WhenFullTheBiggestHolderGivesUntilSharesAreEven) {
  ClientTable table(/*per_client=*/10, /*total=*/4);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(table.Acquire("a"), Verdict::kAdmitted);
  ASSERT_EQ(table.Acquire("b"), Verdict::kFull);
  EXPECT_EQ(table.Donor("b", {"a"}), "a");
  ASSERT_TRUE(table.Transfer("a", "b"));
  EXPECT_EQ(table.Holding("a"), 3);
  EXPECT_EQ(table.Holding("b"), 1);
  ASSERT_EQ(table.Acquire("b"), Verdict::kFull);
  ASSERT_TRUE(table.Transfer("a", "b"));
  // 2 and 2: giving one more would leave a with fewer than b.
  EXPECT_EQ(table.Donor("b", {"a", "b"}), "");
  EXPECT_FALSE(table.Transfer("a", "b"));
  // Nor can a take back, nor take from itself.
  EXPECT_EQ(table.Donor("a", {"a", "b"}), "");
  EXPECT_FALSE(table.Transfer("a", "a"));
  // A newcomer holding none takes from a holder of two.
  EXPECT_EQ(table.Donor("c", {"a", "b"}), "a");
}

TEST(ClientTableTest, TheDonorIsTheCandidateHoldingTheMost) {
  ClientTable table(/*per_client=*/10, /*total=*/6);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(table.Acquire("big"), Verdict::kAdmitted);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(table.Acquire("small"), Verdict::kAdmitted);
  EXPECT_EQ(table.Donor("new", {"small", "big"}), "big");
  // Only the caller's candidates: those it has a connection of to close.
  EXPECT_EQ(table.Donor("new", {"small"}), "small");
  EXPECT_EQ(table.Donor("new", {"gone"}), "");
  EXPECT_FALSE(table.Transfer("gone", "new"));
}

TEST(ClientTableTest, AClientIsForgottenWhenItHoldsNone) {
  ClientTable table(/*per_client=*/1, /*total=*/1);
  ASSERT_EQ(table.Acquire("a"), Verdict::kAdmitted);
  table.Release("a");
  EXPECT_EQ(table.Holding("a"), 0);
  EXPECT_EQ(table.Acquire("b"), Verdict::kAdmitted);
  // Releasing a client that holds nothing changes nothing.
  table.Release("a");
  EXPECT_EQ(table.Acquire("c"), Verdict::kFull);
}

}  // namespace
}  // namespace canhazgpu::httpfront
