#include <string>

#include "cel/conformance.h"
#include "cel/dra_device.h"
#include "cel/program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cel {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

Value Eval(std::string_view expr, const Env& env = Env(), const std::vector<Value>& vars = {}) {
  auto program = env.Compile(expr);
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok()) return Value::Error("compile");
  return program->Evaluate(vars);
}

TEST(CelTest, CompileOnceEvaluateWithManyActivations) {
  Env env;
  env.Declare("x", Type::Int());
  auto program = env.Compile("x * 2 + 1");
  ASSERT_TRUE(program.ok());
  for (int64_t i = 0; i < 5; ++i) {
    Value v = program->Evaluate({Value::Int(i)});
    ASSERT_EQ(v.kind(), Kind::kInt);
    EXPECT_EQ(v.int_value(), 2 * i + 1);
  }
}

// Each select and call node remembers where it found its entry or overload
// last time; maps with other key orders, missing keys and other argument
// kinds must still get the right answer.
TEST(CelTest, LookupAndOverloadGuessesNeverChangeResults) {
  Env env;
  env.Declare("m", Type::Dyn());
  env.Declare("a", Type::Dyn());
  auto program = env.Compile("m.k + a");
  ASSERT_TRUE(program.ok()) << program.status();
  auto map = [](std::vector<std::pair<std::string, Value>> kv) {
    MapData data;
    for (auto& [k, v] : kv) data.entries.emplace_back(Value::String(k), std::move(v));
    return Value::Map(std::move(data));
  };
  Value first = map({{"x", Value::Int(0)}, {"k", Value::Int(1)}});
  Value reordered = map({{"k", Value::Int(10)}, {"x", Value::Int(0)}, {"y", Value::Int(0)}});
  Value shorter = map({{"k", Value::String("s")}});
  Value missing = map({{"x", Value::Int(0)}});
  EXPECT_EQ(program->Evaluate({first, Value::Int(2)}).int_value(), 3);
  EXPECT_EQ(program->Evaluate({reordered, Value::Int(2)}).int_value(), 12);
  EXPECT_EQ(program->Evaluate({first, Value::Int(5)}).int_value(), 6);
  // Another overload of _+_ at the same node, and a guess past the end.
  EXPECT_EQ(program->Evaluate({shorter, Value::String("t")}).str(), "st");
  EXPECT_EQ(program->Evaluate({reordered, Value::Int(1)}).int_value(), 11);
  Value error = program->Evaluate({missing, Value::Int(1)});
  ASSERT_TRUE(error.is_error());
  EXPECT_THAT(error.error().message, HasSubstr("no such key: k"));
  EXPECT_TRUE(program->Evaluate({first, Value::String("t")}).is_error());
}

TEST(CelTest, ParseErrorsCarryLineAndColumn) {
  auto program = Env().Compile("1 +\n  (2 *");
  ASSERT_FALSE(program.ok());
  EXPECT_THAT(std::string(program.status().message()), StartsWith("2:7: "));
}

TEST(CelTest, TypeErrorsCarryThePositionOfTheNode) {
  auto program = Env().Compile("1 + 'a'");
  ASSERT_FALSE(program.ok());
  EXPECT_THAT(std::string(program.status().message()),
              StartsWith("1:3: found no matching overload for '_+_'"));
}

TEST(CelTest, RuntimeErrorsCarryThePositionOfTheFailingNode) {
  auto program = Env().Compile("{'a': 1}.b == 1");
  ASSERT_TRUE(program.ok());
  Value v = program->Evaluate(std::vector<Value>{});
  ASSERT_TRUE(v.is_error());
  EXPECT_EQ(program->DescribeError(v), "1:9: no such key: b");
}

TEST(CelTest, MacroArgumentsAreChecked) {
  auto has = Env().Compile("has(1)");
  ASSERT_FALSE(has.ok());
  EXPECT_THAT(std::string(has.status().message()), HasSubstr("invalid argument to has() macro"));
  auto all = Env().Compile("[1].all(1, true)");
  ASSERT_FALSE(all.ok());
  EXPECT_THAT(std::string(all.status().message()), HasSubstr("argument must be a simple name"));
}

TEST(CelTest, QuotedFieldNames) {
  EXPECT_TRUE(Eval("{'content-type': 'json'}.`content-type` == 'json'").is_bool(true));
  EnvOptions options;
  options.parse.quoted_field_selection = false;
  EXPECT_FALSE(Env(options).Compile("{'a-b': 1}.`a-b` == 1").ok());
}

TEST(CelTest, UnresolvedFunctionsAreRuntimeErrorsWithoutTheChecker) {
  EnvOptions options;
  options.type_check = false;
  Env env(options);
  EXPECT_TRUE(Eval("nope(1) || true", env).is_bool(true));
  Value v = Eval("nope(1)", env);
  ASSERT_TRUE(v.is_error());
  EXPECT_EQ(v.error().message, "unbound function 'nope'");
  EXPECT_FALSE(Env().Compile("nope(1) || true").ok());
}

TEST(CelTest, ErrorAbsorbingLogic) {
  EXPECT_TRUE(Eval("1/0 == 1 && false").is_bool(false));
  EXPECT_TRUE(Eval("false && 1/0 == 1").is_bool(false));
  EXPECT_TRUE(Eval("1/0 == 1 || true").is_bool(true));
  EXPECT_TRUE(Eval("1/0 == 1 && true").is_error());
}

TEST(CelTest, CostLimitStopsRunawayExpressions) {
  // 1000^3 iterations: far beyond Kubernetes' 1,000,000 per evaluation.
  std::string list = "'" + std::string(1000, 'x') + "'.split('')";
  Value v = Eval(list + ".all(a, " + list + ".all(b, " + list + ".all(c, true)))");
  ASSERT_TRUE(v.is_error());
  EXPECT_THAT(v.error().message, HasSubstr("cost limit exceeded"));
}

TEST(CelTest, NestingDeeperThanTheLimitIsAParseError) {
  std::string deep = std::string(500, '(') + "1" + std::string(500, ')');
  auto program = Env().Compile(deep);
  ASSERT_FALSE(program.ok());
  EXPECT_THAT(std::string(program.status().message()), HasSubstr("nested"));
}

TEST(CelTest, OverlongSourceIsRejected) {
  auto program = Env().Compile("'" + std::string(20000, 'a') + "' == ''");
  ASSERT_FALSE(program.ok());
  EXPECT_THAT(std::string(program.status().message()), HasSubstr("limit of 10240"));
}

TEST(CelTest, QualifiedNamesResolveLongestPrefixInContainer) {
  EnvOptions options;
  options.container = "com.example";
  Env env(options);
  env.Declare("com.example.a.b", Type::Map(Type::String(), Type::Int()));
  env.Declare("a", Type::Map(Type::String(), Type::Dyn()));
  MapData ab;
  ab.entries.emplace_back(Value::String("c"), Value::Int(7));
  Value v = Eval("a.b.c", env, {Value::Map(ab), Value::Map(MapData{})});
  ASSERT_EQ(v.kind(), Kind::kInt);
  EXPECT_EQ(v.int_value(), 7);
}

TEST(CelTest, ComprehensionVariablesShadowQualifiedNames) {
  Env env;
  env.Declare("y.z", Type::Int());
  Value v = Eval("[{'z': 0}].exists(y, y.z == 0)", env, {Value::Int(5)});
  EXPECT_TRUE(v.is_bool(true));
}

TEST(CelTest, ConstantCallsAreFoldedAtCompileTime) {
  Env env = Env::DraSelector();
  auto program = env.Compile("quantity('40Gi') == quantity('42949672960')");
  ASSERT_TRUE(program.ok());
  // Folded to one constant: evaluation visits a single node.
  int64_t cost = 0;
  Value v = program->Evaluate(std::vector<Value>{Value::Null()}.data(), &cost);
  EXPECT_TRUE(v.is_bool(true));
  EXPECT_EQ(cost, 1);
}

TEST(CelTest, DraDeviceMissingDomainIsEmptyMap) {
  Value device = MakeDraDevice("gpu.example.com", {{"model", Value::String("A100")}},
                               {{"memory", Value::FromQuantity(*Quantity::Parse("40Gi"))}});
  Env env = Env::DraSelector();
  EXPECT_TRUE(
      Eval("device.attributes['gpu.example.com'].model == 'A100'", env, {device}).is_bool(true));
  EXPECT_TRUE(Eval("size(device.attributes['x.example.com']) == 0", env, {device}).is_bool(true));
  Value missing = Eval("device.attributes['gpu.example.com'].nope == 'A100'", env, {device});
  ASSERT_TRUE(missing.is_error());
  EXPECT_EQ(missing.error().message, "no such key: nope");
}

TEST(CelTest, DraSelectorMustBeBool) {
  Env env = Env::DraSelector();
  auto program = env.Compile("device.driver");
  ASSERT_FALSE(program.ok());
  EXPECT_THAT(std::string(program.status().message()), HasSubstr("must evaluate to bool"));
}

TEST(QuantityTest, ParsesSuffixesExactly) {
  EXPECT_EQ(Quantity::Parse("40Gi")->Compare(*Quantity::Parse("42949672960")), 0);
  EXPECT_EQ(Quantity::Parse("1.5Ki")->Compare(*Quantity::Parse("1536")), 0);
  EXPECT_EQ(Quantity::Parse("2000m")->Compare(*Quantity::Parse("2")), 0);
  EXPECT_EQ(Quantity::Parse("1e3")->Compare(*Quantity::Parse("1k")), 0);
  EXPECT_LT(Quantity::Parse("999Mi")->Compare(*Quantity::Parse("1Gi")), 0);
  EXPECT_EQ(Quantity::Parse("40G")->AsInt64(), 40000000000);
  EXPECT_FALSE(Quantity::Parse("1.5")->AsInt64().has_value());
  EXPECT_FALSE(Quantity::Parse("1.5Gi")->AsInt64().has_value());
  EXPECT_EQ(Quantity::Parse("1.5Gi")->ToString(), "1610612736");
  EXPECT_EQ(Quantity::Parse("-0.25")->ToString(), "-0.25");
}

TEST(QuantityTest, RejectsBadSyntax) {
  for (const char* bad : {"", "Gi", "40GB", "4 0", "1.2.3", "40gi", "1e", "--1"}) {
    EXPECT_FALSE(Quantity::Parse(bad).ok()) << bad;
  }
}

TEST(SemverTest, StrictAndNormalizingParse) {
  EXPECT_TRUE(Semver::Parse("1.2.3-rc.1+build.5").ok());
  EXPECT_FALSE(Semver::Parse("v1.2.3").ok());
  EXPECT_FALSE(Semver::Parse("1.2").ok());
  EXPECT_FALSE(Semver::Parse("01.2.3").ok());
  EXPECT_EQ(Semver::Parse("v1.02", true)->ToString(), "1.2.0");
  EXPECT_FALSE(Semver::Parse("1.2-rc", true).ok());
}

TEST(SemverTest, PrecedenceFollowsSemver2) {
  const char* ordered[] = {"1.0.0-alpha",  "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
                           "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1",       "1.0.0"};
  for (size_t i = 0; i + 1 < std::size(ordered); ++i) {
    EXPECT_EQ(Semver::Parse(ordered[i])->Compare(*Semver::Parse(ordered[i + 1])), -1) << ordered[i];
  }
}

TEST(ConformanceTest, DraSelectorCasesAllPass) {
  auto result = RunConformanceFile(CANHAZGPU_CEL_TESTDATA "/dra_selectors.jsonl");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->passed, 50);
  for (const ConformanceFailure& f : result->failures) {
    ADD_FAILURE() << f.id << ": " << f.expr << "\n expected " << f.expected << "\n actual "
                  << f.actual;
  }
}

TEST(ConformanceTest, ReportsFailuresWithExpectedAndActual) {
  ConformanceFileResult result;
  ASSERT_TRUE(
      RunConformanceLine(R"({"file":"x","section":"s","name":"n","expr":"1 + 1","bindings":{},)"
                         R"("expect":{"value":{"int":"3"}},"skip_reason":null})",
                         &result)
          .ok());
  ASSERT_EQ(result.failed, 1);
  EXPECT_EQ(result.failures[0].id, "x/s/n");
  EXPECT_EQ(result.failures[0].actual, "2 (int)");
}

TEST(ConformanceTest, SkipsCasesWithASkipReasonAndRejectsNonCases) {
  ConformanceFileResult result;
  ASSERT_TRUE(RunConformanceLine(
                  R"({"expr":"x","expect":{"value":{"int":"1"}},"skip_reason":"proto"})", &result)
                  .ok());
  EXPECT_EQ(result.skipped, 1);
  EXPECT_FALSE(RunConformanceLine("{\"hello\": 1}", &result).ok());
  EXPECT_FALSE(RunConformanceLine("not json", &result).ok());
}

TEST(ConformanceTest, RefusesWhatIsNotABoundedRegularFile) {
  auto zero = RunConformanceFile("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(), "/dev/zero: not a regular file");
  EXPECT_TRUE(absl::IsNotFound(RunConformanceFile("/nonexistent/x.jsonl").status()));
}

TEST(ConformanceTest, DeeplyNestedValuesAreAnErrorNotARecursion) {
  std::string value = R"({"int":"1"})";
  for (int i = 0; i < 10000; ++i) value = R"({"list":[)" + value + "]}";
  ConformanceFileResult result;
  absl::Status status = RunConformanceLine(
      R"({"expr":"x","bindings":{"x":)" + value + R"(},"expect":{"value":{"int":"1"}}})", &result);
  EXPECT_THAT(std::string(status.message()), HasSubstr("nested more than 64 levels"));
}

}  // namespace
}  // namespace canhazgpu::cel
