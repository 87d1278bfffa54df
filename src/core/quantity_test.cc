#include "core/quantity.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu {
namespace {

using ::testing::HasSubstr;

int64_t ValueOf(const std::string& text) {
  absl::StatusOr<int64_t> value = QuantityValue(text);
  EXPECT_TRUE(value.ok()) << text << ": " << value.status();
  return value.value_or(-12345);
}

TEST(QuantityTest, BinarySuffixes) {
  EXPECT_EQ(ValueOf("1Ki"), 1024);
  EXPECT_EQ(ValueOf("3Mi"), 3 * 1024 * 1024);
  EXPECT_EQ(ValueOf("40Gi"), int64_t{40} << 30);
  EXPECT_EQ(ValueOf("2Ti"), int64_t{2} << 40);
  EXPECT_EQ(ValueOf("5Pi"), int64_t{5} << 50);
  EXPECT_EQ(ValueOf("7Ei"), int64_t{7} << 60);
  EXPECT_EQ(ValueOf("1.5Gi"), int64_t{3} << 29);
}

TEST(QuantityTest, DecimalSuffixes) {
  EXPECT_EQ(ValueOf("42"), 42);
  EXPECT_EQ(ValueOf("+42"), 42);
  EXPECT_EQ(ValueOf("-42"), -42);
  EXPECT_EQ(ValueOf("2k"), 2'000);
  EXPECT_EQ(ValueOf("1.5k"), 1'500);
  EXPECT_EQ(ValueOf("3M"), 3'000'000);
  EXPECT_EQ(ValueOf("4G"), 4'000'000'000);
  EXPECT_EQ(ValueOf("5T"), 5'000'000'000'000);
  EXPECT_EQ(ValueOf("6P"), 6'000'000'000'000'000);
  EXPECT_EQ(ValueOf("7E"), 7'000'000'000'000'000'000);
  EXPECT_EQ(ValueOf("0"), 0);
  EXPECT_EQ(ValueOf("0.000Gi"), 0);
  EXPECT_EQ(ValueOf("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ValueOf("100000000000000000000m"), 100'000'000'000'000'000);
}

TEST(QuantityTest, FractionsRoundUpAwayFromZero) {
  EXPECT_EQ(ValueOf("500m"), 1);
  EXPECT_EQ(ValueOf("1000m"), 1);
  EXPECT_EQ(ValueOf("1001m"), 2);
  EXPECT_EQ(ValueOf("-500m"), -1);
  EXPECT_EQ(ValueOf("0.5"), 1);
  EXPECT_EQ(ValueOf(".5"), 1);
  EXPECT_EQ(ValueOf("1."), 1);
  EXPECT_EQ(ValueOf("1.0000000001Ki"), 1025);
  EXPECT_EQ(ValueOf("1e-50"), 1);
}

TEST(QuantityTest, DecimalExponents) {
  EXPECT_EQ(ValueOf("1e3"), 1'000);
  EXPECT_EQ(ValueOf("1E3"), 1'000);
  EXPECT_EQ(ValueOf("2.5e2"), 250);
  EXPECT_EQ(ValueOf("12e-1"), 2);
  EXPECT_EQ(ValueOf("1e+6"), 1'000'000);
  EXPECT_EQ(ValueOf("5e0"), 5);
  EXPECT_EQ(ValueOf("1e18"), 1'000'000'000'000'000'000);
}

TEST(QuantityTest, GarbageIsRejectedInOneLine) {
  for (const char* text : {"", "Gi", "abc", "1Gb", "1 Gi", " 1", "--1", "+", ".", "1..2", "1.2.3",
                           "0x10", "1ki", "1K", "1e", "1e+", "1e1.5", "1Gi ", "1m1"}) {
    absl::StatusOr<int64_t> value = QuantityValue(text);
    ASSERT_FALSE(value.ok()) << '"' << text << "\" gave " << *value;
    EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(value.status().message()),
                HasSubstr("invalid quantity '" + std::string(text) + "': "));
  }
  // Kubernetes' own words.
  EXPECT_EQ(QuantityValue("1Gb").status().message(),
            "invalid quantity '1Gb': unable to parse quantity's suffix");
  EXPECT_EQ(QuantityValue("Gi").status().message(),
            "invalid quantity 'Gi': quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
}

TEST(QuantityTest, OverflowIsRejected) {
  for (const char* text :
       {"8Ei", "9223372036854775808", "10E", "1e19", "99999999999Gi", "12345678901234567890123"}) {
    absl::StatusOr<int64_t> value = QuantityValue(text);
    ASSERT_FALSE(value.ok()) << text << " gave " << *value;
    EXPECT_THAT(std::string(value.status().message()), HasSubstr("does not fit in 64 bits"));
  }
  EXPECT_EQ(QuantityValue("8Ei").status().message(),
            "invalid quantity '8Ei': does not fit in 64 bits");
}

}  // namespace
}  // namespace canhazgpu
