#include "core/json_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace canhazgpu {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Issue 14: dump() threw type_error 316 on a note that is not UTF-8.
TEST(JsonTextTest, InvalidUtf8IsShownAsHexInsteadOfThrowing) {
  ordered_json value = {{"note", "caf\xe9"}, {"list", {"x\xff", "ok"}}, {"n", 3}};
  ASSERT_THROW(value.dump(), json::type_error);
  const std::string text = DumpJson(value);
  EXPECT_EQ(text, R"({"note":"caf\\xe9","list":["x\\xff","ok"],"n":3})");
  EXPECT_EQ(json::parse(text)["note"], "caf\\xe9");
}

TEST(JsonTextTest, ObjectKeysAreMadeValidToo) {
  json value = {{"pro\xc3", 1}, {"fine", 2}};
  EXPECT_EQ(DumpJson(value), R"({"fine":2,"pro\\xc3":1})");
}

TEST(JsonTextTest, ValidTextIsExactAndPrettyPrintingIsKept) {
  ordered_json value = {{"note", "caf\xc3\xa9 \\ \"q\""}};
  EXPECT_EQ(DumpJson(value, 2), value.dump(2));
}

// Control characters stay the same characters to a parser, but none is
// written raw: C0 by nlohmann, DEL, C1 and bidi controls by us.
TEST(JsonTextTest, NoRawControlCharacterIsWritten) {
  const std::string note =
      "\x1b]0;pwned\x07\x1b[2J\n\x7f\xc2\x9b"
      "1m\xe2\x80\xae"
      "x\xe2\x81\xa9\xe2\x80\xa8";
  const std::string text = DumpJson(ordered_json{{"note", note}});
  EXPECT_EQ(text, R"({"note":"\u001b]0;pwned\u0007\u001b[2J\n\u007f\u009b1m\u202ex\u2069\u2028"})");
  EXPECT_EQ(json::parse(text)["note"], note);
}

TEST(JsonTextTest, EscapeHiddenControlsLeavesOtherTextAlone) {
  EXPECT_EQ(EscapeHiddenControlsInJson(R"(["a\\u202e", "\u00e9"])"), R"(["a\\u202e", "\u00e9"])");
  EXPECT_EQ(EscapeHiddenControlsInJson("\"\xc3\xa9\xe2\x82\xac\""), "\"\xc3\xa9\xe2\x82\xac\"");
}

}  // namespace
}  // namespace canhazgpu
