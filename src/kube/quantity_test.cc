#include "kube/quantity.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::kube {
namespace {

using ::testing::HasSubstr;

int64_t Parse(const std::string& text) {
  absl::StatusOr<int64_t> value = ParseQuantity(text);
  EXPECT_TRUE(value.ok()) << text << ": " << value.status();
  return value.value_or(-12345);
}

TEST(QuantityTest, BinarySuffixes) {
  EXPECT_EQ(Parse("1Ki"), 1024);
  EXPECT_EQ(Parse("3Mi"), 3 * 1024 * 1024);
  EXPECT_EQ(Parse("40Gi"), int64_t{40} << 30);
  EXPECT_EQ(Parse("2Ti"), int64_t{2} << 40);
  EXPECT_EQ(Parse("5Pi"), int64_t{5} << 50);
  EXPECT_EQ(Parse("7Ei"), int64_t{7} << 60);
  EXPECT_EQ(Parse("1.5Gi"), int64_t{3} << 29);
}

TEST(QuantityTest, DecimalSuffixes) {
  EXPECT_EQ(Parse("42"), 42);
  EXPECT_EQ(Parse("+42"), 42);
  EXPECT_EQ(Parse("-42"), -42);
  EXPECT_EQ(Parse("2k"), 2'000);
  EXPECT_EQ(Parse("1.5k"), 1'500);
  EXPECT_EQ(Parse("3M"), 3'000'000);
  EXPECT_EQ(Parse("4G"), 4'000'000'000);
  EXPECT_EQ(Parse("5T"), 5'000'000'000'000);
  EXPECT_EQ(Parse("6P"), 6'000'000'000'000'000);
  EXPECT_EQ(Parse("7E"), 7'000'000'000'000'000'000);
  EXPECT_EQ(Parse("0"), 0);
  EXPECT_EQ(Parse("0.000Gi"), 0);
  EXPECT_EQ(Parse("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(Parse("100000000000000000000m"), 100'000'000'000'000'000);
}

TEST(QuantityTest, FractionsRoundUpAwayFromZero) {
  EXPECT_EQ(Parse("500m"), 1);
  EXPECT_EQ(Parse("1000m"), 1);
  EXPECT_EQ(Parse("1001m"), 2);
  EXPECT_EQ(Parse("-500m"), -1);
  EXPECT_EQ(Parse("0.5"), 1);
  EXPECT_EQ(Parse(".5"), 1);
  EXPECT_EQ(Parse("1."), 1);
  EXPECT_EQ(Parse("1.0000000001Ki"), 1025);
  EXPECT_EQ(Parse("1e-50"), 1);
}

TEST(QuantityTest, DecimalExponents) {
  EXPECT_EQ(Parse("1e3"), 1'000);
  EXPECT_EQ(Parse("1E3"), 1'000);
  EXPECT_EQ(Parse("2.5e2"), 250);
  EXPECT_EQ(Parse("12e-1"), 2);
  EXPECT_EQ(Parse("1e+6"), 1'000'000);
  EXPECT_EQ(Parse("5e0"), 5);
  EXPECT_EQ(Parse("1e18"), 1'000'000'000'000'000'000);
}

TEST(QuantityTest, GarbageIsRejectedInOneLine) {
  for (const char* text : {"", "Gi", "abc", "1Gb", "1 Gi", " 1", "--1", "+", ".", "1..2", "1.2.3",
                           "0x10", "1ki", "1K", "1e", "1e+", "1e1.5", "1Gi ", "1m1"}) {
    absl::StatusOr<int64_t> value = ParseQuantity(text);
    ASSERT_FALSE(value.ok()) << '"' << text << "\" gave " << *value;
    EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(value.status().message()),
                HasSubstr("invalid quantity \"" + std::string(text) + "\": "));
  }
  EXPECT_EQ(ParseQuantity("1Gb").status().message(),
            "invalid quantity \"1Gb\": unknown suffix \"Gb\"");
  EXPECT_EQ(ParseQuantity("Gi").status().message(), "invalid quantity \"Gi\": expected a number");
}

TEST(QuantityTest, OverflowIsRejected) {
  for (const char* text :
       {"8Ei", "9223372036854775808", "10E", "1e19", "99999999999Gi", "12345678901234567890123"}) {
    absl::StatusOr<int64_t> value = ParseQuantity(text);
    ASSERT_FALSE(value.ok()) << text << " gave " << *value;
    EXPECT_THAT(std::string(value.status().message()),
                testing::AnyOf(HasSubstr("does not fit in 64 bits"),
                               HasSubstr("more than 19 significant digits")));
  }
  EXPECT_EQ(ParseQuantity("8Ei").status().message(),
            "invalid quantity \"8Ei\": does not fit in 64 bits");
}

}  // namespace
}  // namespace canhazgpu::kube
