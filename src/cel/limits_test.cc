// What no expression may do, whatever a user types: take time exponential
// in its length, nest past the limit, run past the cost limit, or make an
// error message quote more than a short line of it.
#include <string>

#include "cel/dra_device.h"
#include "cel/program.h"
#include "core/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cel {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

Value Device() {
  return MakeDraDevice("gpu.example.com", {{"model", Value::String("A100")}},
                       {{"memory", Value::FromQuantity(*Quantity::Parse("40Gi"))}});
}

// `device.attributes["a"]["a"]...["a"] == 1` with `levels` indexes: the
// first reads a missing domain as an empty map, the second fails.
std::string NestedIndex(int levels) {
  std::string source = "device.attributes";
  for (int i = 0; i < levels; ++i) source += "[\"a\"]";
  return source + " == 1";
}

// The evaluation's work, as the cost it charged (one unit per node).
int64_t CostOf(const std::string& source, bool plan) {
  EnvOptions options = Env::DraSelector().options();
  options.plan = plan;
  Env env(options);
  env.Declare("device", Type::Object("kubernetes.DRADevice"));
  auto program = env.Compile(source);
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok()) return -1;
  Value device = Device();
  int64_t cost = 0;
  Value v = program->Evaluate(&device, &cost);
  EXPECT_TRUE(v.is_error());  // no such key: a
  EXPECT_THAT(v.error().message, Not(HasSubstr("cost limit")));
  return cost;
}

// Each level used to evaluate its operand twice (once looking for the
// entry, once more on the general path): 2^levels. Now each level adds
// the same work, planned or not, up to the nesting limit.
TEST(CelLimitsTest, NestedIndexesTakeWorkLinearInTheirNumber) {
  for (bool plan : {true, false}) {
    const int64_t base = CostOf(NestedIndex(10), plan);
    const int64_t step = CostOf(NestedIndex(11), plan) - base;
    EXPECT_GT(step, 0);
    EXPECT_LE(step, 3);
    for (int levels : {12, 16, 20, 100, 200, 240}) {
      EXPECT_EQ(CostOf(NestedIndex(levels), plan), base + (levels - 10) * step)
          << levels << " levels, plan " << plan;
    }
  }
}

TEST(CelLimitsTest, NestedSelectsOnAMissingKeyTakeLinearWork) {
  std::string source = "device.attributes[\"gpu.example.com\"]";
  for (int i = 0; i < 200; ++i) source += ".x";
  const int64_t cost = CostOf(source + " == 1", true);
  EXPECT_GT(cost, 0);
  EXPECT_LT(cost, 1000);
}

TEST(CelLimitsTest, NestingDeeperThanTheLimitIsAClearError) {
  Env env = Env::DraSelector();
  // Each of these builds a tree as deep as it is long without nesting
  // the parser: selects, indexes, arithmetic, calls, lists.
  std::string selects = "device.attributes";
  for (int i = 0; i < 300; ++i) selects += ".a";
  std::string sum = "1";
  for (int i = 0; i < 300; ++i) sum += " + 1";
  std::string calls = "true";
  for (int i = 0; i < 300; ++i) calls = "!(" + calls + ")";
  std::string lists = std::string(300, '[') + "1" + std::string(300, ']');
  for (const std::string& deep :
       {NestedIndex(300), selects + " == 1", sum + " == 301", calls, "size(" + lists + ") == 1"}) {
    auto program = env.Compile(deep);
    ASSERT_FALSE(program.ok()) << deep.substr(0, 40);
    EXPECT_THAT(std::string(program.status().message()),
                HasSubstr("expression nested more than 250 levels"));
  }
  // Just below the limit, the same shapes compile and run.
  EXPECT_TRUE(env.Compile(NestedIndex(240)).ok());
  std::string ok_sum = "1";
  for (int i = 0; i < 240; ++i) ok_sum += " + 1";
  auto program = Env().Compile(ok_sum);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->Evaluate(std::vector<Value>{}).int_value(), 241);
}

// cel-go balances && and ||: a long conjunction is not a deep tree.
TEST(CelLimitsTest, LongConjunctionsAreNotTooDeep) {
  std::string all = "true";
  for (int i = 0; i < 1200; ++i) all += " && true";
  auto program = Env().Compile(all);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_TRUE(program->Evaluate(std::vector<Value>{}).is_bool(true));
  std::string any = "false";
  for (int i = 0; i < 1000; ++i) any += " || false";
  EXPECT_TRUE(Env().Compile(any + " || true")->Evaluate(std::vector<Value>{}).is_bool(true));
}

// A chain far past the limit is refused, not a stack overflow in the
// parser or while freeing the tree.
TEST(CelLimitsTest, VeryLongChainsAreRefusedWithoutOverflowingTheStack) {
  EnvOptions options;
  options.max_source_length = 1 << 22;
  std::string selects = "a";
  for (int i = 0; i < 500000; ++i) selects += ".a";
  auto program = Env(options).Compile(selects);
  ASSERT_FALSE(program.ok());
  EXPECT_THAT(std::string(program.status().message()), HasSubstr("nested more than"));
  std::string parens = std::string(100000, '(') + "1" + std::string(100000, ')');
  EXPECT_FALSE(Env(options).Compile(parens).ok());
}

TEST(CelLimitsTest, StringsBuiltByDoublingHitTheCostLimit) {
  // 2^40 bytes if nothing stopped it.
  std::string source = "'xxxxxxxxxx'";
  for (int i = 0; i < 40; ++i)
    source = StrCat("cel.bind(s", i, ", ", source, ", s", i, " + s", i, ")");
  auto program = Env().Compile("size(" + source + ") > 0");
  ASSERT_TRUE(program.ok()) << program.status();
  Value v = program->Evaluate(std::vector<Value>{});
  ASSERT_TRUE(v.is_error());
  EXPECT_THAT(v.error().message, HasSubstr("cost limit exceeded"));
}

TEST(CelLimitsTest, ListsBuiltByDoublingHitTheCostLimit) {
  std::string source = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]";
  for (int i = 0; i < 40; ++i)
    source = "cel.bind(l" + std::to_string(i) + ", " + source + ", l" + std::to_string(i) + " + l" +
             std::to_string(i) + ")";
  auto program = Env().Compile("size(" + source + ") > 0");
  ASSERT_TRUE(program.ok()) << program.status();
  int64_t cost = 0;
  Value v = program->Evaluate(std::vector<Value>{}.data(), &cost);
  ASSERT_TRUE(v.is_error());
  EXPECT_THAT(v.error().message, HasSubstr("cost limit exceeded"));
}

// Work on long strings is charged by their length: a loop over a long
// string's test may not run a million times.
TEST(CelLimitsTest, WorkOnLongStringsIsChargedByLength) {
  std::string source = "'xxxxxxxxxx'";
  for (int i = 0; i < 16; ++i)
    source = StrCat("cel.bind(s", i, ", ", source, ", s", i, " + s", i, ")");
  // s is 640 KiB; 10,000 scans of it would be 6.5 GB of reading.
  // StrCat, not "'" + std::string(...): GCC 12 -O3 reports a false
  // -Wrestrict inside libstdc++ for a literal prepended to a temporary.
  std::string list = StrCat("'", std::string(100, 'y'), "'.split('')");
  auto program = Env().Compile("cel.bind(s, " + source + ", " + list + ".all(a, " + list +
                               ".all(b, s.contains('z') == false)))");
  ASSERT_TRUE(program.ok()) << program.status();
  Value v = program->Evaluate(std::vector<Value>{});
  ASSERT_TRUE(v.is_error());
  EXPECT_THAT(v.error().message, HasSubstr("cost limit exceeded"));
}

// `[1, ..., 10]` doubled 7 times: 1,280 elements, bound to `l` around `body`.
std::string WithLongList(const std::string& body) {
  std::string source = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]";
  for (int i = 0; i < 7; ++i) {
    source = "cel.bind(l" + std::to_string(i) + ", " + source + ", l" + std::to_string(i) + " + l" +
             std::to_string(i) + ")";
  }
  return "cel.bind(l, " + source + ", " + body + ")";
}

Value EvaluateConstant(const std::string& source, int64_t* cost) {
  auto program = Env().Compile(source);
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok()) return Value::Error("does not compile");
  return program->Evaluate(std::vector<Value>{}.data(), cost);
}

// Values are shared, so `l.map(x, l)` is cheap to build (1,280 references)
// but holds 1.6 M elements; comparing two of them in a loop was ~10^9 steps
// within the cost limit. Deep equality is charged by what it compares.
TEST(CelLimitsTest, DeepEqualityIsChargedByTheElementsItCompares) {
  int64_t cost = 0;
  Value once = EvaluateConstant(WithLongList("l.map(x, l) == l.map(y, l)"), &cost);
  ASSERT_FALSE(once.is_error()) << once.error().message;
  EXPECT_TRUE(once.bool_value());
  EXPECT_GE(cost, 1280 * 1280 / 10) << "a unit per ten elements compared";

  for (const std::string test :
       {"l.map(x, l) == l.map(y, l)", "!(l.map(x, l) != l.map(y, l))",
        "l.map(x, l) in [l.map(y, l)]", "[l.map(y, l)].indexOf(l.map(x, l)) == 0"}) {
    Value loop = EvaluateConstant(WithLongList("l.all(z, " + test + ")"), &cost);
    ASSERT_TRUE(loop.is_error()) << test;
    EXPECT_THAT(loop.error().message, HasSubstr("cost limit exceeded")) << test;
  }
}

// A map of 1,280 entries built at run time: each lookup used to scan it for
// free, so a loop of lookups was ~10^9 steps within the cost limit. Now the
// last key costs a unit per ten entries more than the first.
TEST(CelLimitsTest, MapLookupsAreChargedByTheEntriesTheyScan) {
  const std::string map = "l.transformList(i, v, i).transformMapEntry(i, v, {v: i})";
  auto cost_of_loop = [&](const std::string& lookup) {
    int64_t cost = 0;
    Value v =
        EvaluateConstant(WithLongList("cel.bind(m, " + map + ", l.all(x, " + lookup + "))"), &cost);
    EXPECT_FALSE(v.is_error()) << lookup << ": " << v.error().message;
    if (!v.is_error()) {
      EXPECT_TRUE(v.bool_value()) << lookup;
    }
    return cost;
  };
  for (const auto& [first, last] : std::vector<std::pair<std::string, std::string>>{
           {"m[0] == 0", "m[1279] == 1279"},
           {"0 in m", "1279 in m"},
           {"m[?0].hasValue()", "m[?1279].hasValue()"}}) {
    EXPECT_GE(cost_of_loop(last) - cost_of_loop(first), 1280 * 127) << last;
  }
  int64_t cost = 0;
  Value loop = EvaluateConstant(
      WithLongList("cel.bind(m, " + map + ", l.all(x, l.all(y, m[1279] == 1279)))"), &cost);
  ASSERT_TRUE(loop.is_error());
  EXPECT_THAT(loop.error().message, HasSubstr("cost limit exceeded"));
}

TEST(CelLimitsTest, CompileErrorsQuoteABoundedEscapedExcerpt) {
  // 10 KiB over many lines, the error near the end.
  std::string source;
  for (int i = 0; i < 200; ++i) source += "device.driver == 'x' ||\n";
  source += "device.nope == 1";
  auto program = Env::DraSelector().Compile(source);
  ASSERT_FALSE(program.ok());
  const std::string message(program.status().message());
  EXPECT_THAT(message, StartsWith("201:7: undefined field 'nope'"));
  EXPECT_THAT(message, HasSubstr("||\\ndevice.nope == 1')"));
  EXPECT_THAT(message, Not(HasSubstr("\n")));
  EXPECT_LT(message.size(), 200u);
}

TEST(CelLimitsTest, ExcerptsAreCutAroundThePositionAndEscaped) {
  const std::string source = std::string(100, 'a') + "\x1b]0;pwned\x07" + std::string(100, 'b');
  const std::string excerpt = Excerpt(source, 100);
  EXPECT_THAT(excerpt, StartsWith("..."));
  EXPECT_THAT(excerpt, EndsWith("..."));
  EXPECT_THAT(excerpt, HasSubstr("aaaa\\x1b]0;pwned\\x07bbbb"));
  EXPECT_LT(excerpt.size(), 80u);
  EXPECT_EQ(Excerpt("a == 1", 0), "a == 1");
  EXPECT_EQ(Excerpt("caf\xe9\t\xc2\x9b", 0), "caf\\xe9\\t\\u009b");
  // Never cut inside a UTF-8 sequence.
  std::string wide;
  for (int i = 0; i < 100; ++i) wide += "\xc3\xa9";
  EXPECT_EQ(Excerpt(wide, 101).find("\\x"), std::string::npos);
}

TEST(CelLimitsTest, LongNamesInMessagesAreCut) {
  const std::string name(5000, 'n');
  auto program = Env().Compile(name + " == 1");
  ASSERT_FALSE(program.ok());
  EXPECT_THAT(std::string(program.status().message()), HasSubstr("undeclared reference"));
  EXPECT_LT(program.status().message().size(), 400u);
}

// Found by cel_fuzzer: a quoted name of 150 NULs made a message of 150
// four-byte escapes; the bound is on the escaped text.
TEST(CelLimitsTest, MessagesAreBoundedAfterEscaping) {
  auto program = Env().Compile(StrCat("`", std::string(150, '\0'), "`"));
  ASSERT_FALSE(program.ok());
  const std::string message(program.status().message());
  EXPECT_THAT(message, HasSubstr("\\x00\\x00"));
  EXPECT_EQ(message.find('\0'), std::string::npos);
  EXPECT_LT(message.size(), 400u) << message;
}

TEST(CelLimitsTest, RuntimeErrorsDescribeABoundedLine) {
  Env env;
  env.Declare("m", Type::Dyn());
  auto program = env.Compile("m['" + std::string(3000, 'k') + "\\n'] == 1");
  ASSERT_TRUE(program.ok()) << program.status();
  Value v = program->Evaluate({Value::Map(MapData{})});
  ASSERT_TRUE(v.is_error());
  const std::string described = program->DescribeError(v);
  EXPECT_THAT(described, StartsWith("1:2: no such key: kkk"));
  EXPECT_LT(described.size(), 400u);
  EXPECT_THAT(described, Not(HasSubstr("\n")));
}

}  // namespace
}  // namespace canhazgpu::cel
