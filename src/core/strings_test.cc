#include "core/strings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace canhazgpu {
namespace {

using ::testing::ElementsAre;

TEST(StringsTest, Cat) { EXPECT_EQ(StrCat("gpu ", 3, ": ", std::string("x"), '!'), "gpu 3: x!"); }

TEST(StringsTest, CatWritesNumbersAsAbslDoes) {
  EXPECT_EQ(StrCat(1.5, " ", 0.1 + 0.2, " ", 1e6, " ", 2.0, " ", 1.0f / 3),
            "1.5 0.3 1e+06 2 0.333333");
  EXPECT_EQ(StrCat(int64_t{-9}, " ", uint64_t{18446744073709551615u}), "-9 18446744073709551615");
}

TEST(StringsTest, SplitKeepsOrSkipsEmpty) {
  EXPECT_THAT(Split("a,,b", ','), ElementsAre("a", "", "b"));
  EXPECT_THAT(Split("a,,b", ',', true), ElementsAre("a", "b"));
  EXPECT_THAT(Split("", ','), ElementsAre(""));
}

TEST(StringsTest, TrimAndJoin) {
  EXPECT_EQ(Trim("  x y \n"), "x y");
  EXPECT_EQ(Trim("   "), "");
  EXPECT_EQ(Join({"a", "b"}, ", "), "a, b");
}

TEST(StringsTest, ParseIntRejectsJunk) {
  int v = 0;
  EXPECT_TRUE(ParseInt("42", &v));
  EXPECT_EQ(v, 42);
  EXPECT_FALSE(ParseInt("42x", &v));
  EXPECT_FALSE(ParseInt("", &v));
  EXPECT_FALSE(ParseInt("99999999999", &v));
}

TEST(StringsTest, EditDistance) {
  EXPECT_EQ(EditDistance("gpus", "gpu"), 1u);
  EXPECT_EQ(EditDistance("status", "stauts"), 2u);
}

// Issue 14: text from other users reaches JSON, terminals and the page.
TEST(EscapeTextTest, ValidUtf8AndPrintableAsciiAreUnchanged) {
  for (std::string_view text : {"plain ascii ~!@#$%^&*()", "back\\slash \\xe9 typed",
                                "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80",
                                "\xc2\xa0nbsp \xe2\x80\xaf \xef\xbf\xbd", ""}) {
    EXPECT_EQ(EscapeInvalidUtf8(text), text);
    EXPECT_EQ(EscapeForDisplay(text), text);
  }
}

TEST(EscapeTextTest, EveryByteOfAnIllFormedSequenceIsShownInHex) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"caf\xe9", "caf\\xe9"},                       // Latin-1, the example
      {"x\xff", "x\\xff"},                           // never in UTF-8
      {"\x80\xbf", "\\x80\\xbf"},                    // stray continuations
      {"\xc3", "\\xc3"},                             // lead byte at the end
      {"\xe2\x82x", "\\xe2\\x82x"},                  // truncated, then ASCII
      {"\xc0\xaf", "\\xc0\\xaf"},                    // overlong '/'
      {"\xe0\x80\xaf", "\\xe0\\x80\\xaf"},           // overlong, 3 bytes
      {"\xf0\x80\x80\xaf", "\\xf0\\x80\\x80\\xaf"},  // overlong, 4 bytes
      {"\xed\xa0\x80", "\\xed\\xa0\\x80"},           // UTF-16 surrogate
      {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},  // above U+10FFFF
      {"\xf5\xfe", "\\xf5\\xfe"},                    // bytes no sequence starts with
      {"\xe9t\xc3\xa9", "\\xe9t\xc3\xa9"},           // recovers at the next character
  };
  for (const auto& [in, want] : cases) {
    EXPECT_EQ(EscapeInvalidUtf8(in), want) << in;
    EXPECT_EQ(EscapeForDisplay(in), want) << in;
  }
}

TEST(EscapeTextTest, InvalidUtf8LeavesControlCharactersToJson) {
  EXPECT_EQ(EscapeInvalidUtf8("\x1b]0;pwned\x07\x1b[2J\n\x7f\xc2\x9b"),
            "\x1b]0;pwned\x07\x1b[2J\n\x7f\xc2\x9b");
}

TEST(EscapeTextTest, ControlCharactersAreShownEscaped) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"\x1b]0;pwned\x07\x1b[2J", "\\e]0;pwned\\a\\e[2J"},  // the note
      {"a\bb\tc\nd\ve\ff\rg", "a\\bb\\tc\\nd\\ve\\ff\\rg"},
      {std::string_view("nul\0", 4), "nul\\x00"},
      {"\x01\x1f", "\\x01\\x1f"},
      {"del\x7f", "del\\x7f"},
      {"\xc2\x80\xc2\x9b[2J\xc2\x9f", "\\u0080\\u009b[2J\\u009f"},  // C1, CSI as UTF-8
      {"\x9b", "\\x9b"},  // the same byte alone is not UTF-8
      {"\xe2\x80\xae"
       "evil\xe2\x80\xac",
       "\\u202eevil\\u202c"},  // right-to-left override
      {"\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xad", "\\u202a\\u202b\\u202d"},
      {"\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9", "\\u2066\\u2067\\u2068\\u2069"},
      {"\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", "\\u200e\\u200f\\u061c"},
      {"line\xe2\x80\xa8para\xe2\x80\xa9", "line\\u2028para\\u2029"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(EscapeForDisplay(in), want) << in;
}

// Every one- and two-byte input: the output is well-formed (escaping it
// again changes nothing) and, for display, holds no control byte.
TEST(EscapeTextTest, AnyBytesGiveValidUtf8WithoutControls) {
  for (int a = 0; a < 256; ++a) {
    for (int b = -1; b < 256; ++b) {
      std::string in(1, static_cast<char>(a));
      if (b >= 0) in += static_cast<char>(b);
      std::string valid = EscapeInvalidUtf8(in);
      ASSERT_EQ(EscapeInvalidUtf8(valid), valid) << a << " " << b;
      std::string shown = EscapeForDisplay(in);
      ASSERT_EQ(EscapeForDisplay(shown), shown) << a << " " << b;
      for (unsigned char c : shown) ASSERT_TRUE(c >= 0x20 && c != 0x7f) << a << " " << b;
    }
  }
}

TEST(EscapeTextTest, Utf8PrefixDoesNotCutACharacter) {
  EXPECT_EQ(Utf8Prefix("abc", 5), "abc");
  EXPECT_EQ(Utf8Prefix("abcdef", 3), "abc");
  EXPECT_EQ(Utf8Prefix("ab\xc3\xa9", 3), "ab");  // é would be cut
  EXPECT_EQ(Utf8Prefix("a\xf0\x9f\x9a\x80"
                       "b",
                       4),
            "a");  // so would the rocket
  EXPECT_EQ(Utf8Prefix("a\xf0\x9f\x9a\x80"
                       "b",
                       5),
            "a\xf0\x9f\x9a\x80");
  EXPECT_EQ(Utf8Prefix("ab\x80\x80\x80", 3), "ab\x80");  // not UTF-8: cut as bytes
}

}  // namespace
}  // namespace canhazgpu
