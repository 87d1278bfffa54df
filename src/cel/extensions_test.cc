// The parts of Kubernetes' CEL environment beyond the core language: the
// strings extension v2 (format, quote, indexOf/lastIndexOf edges), the
// timestamp and duration accessors, and optional values in every position.
// Expected values are cel-go v0.26's (what Kubernetes 1.34-1.36 run).
#include <string>

#include "cel/conformance.h"
#include "cel/dra_device.h"
#include "cel/program.h"
#include "core/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cel {
namespace {

using ::testing::HasSubstr;

Value Eval(std::string_view expr, const Env& env = Env()) {
  auto program = env.Compile(expr);
  EXPECT_TRUE(program.ok()) << expr << ": " << program.status();
  if (!program.ok()) return Value::Error("compile");
  return program->Evaluate(std::vector<Value>{});
}

std::string EvalString(std::string_view expr) {
  Value v = Eval(expr);
  if (v.kind() != Kind::kString) return StrCat("<not a string: ", v.DebugString(), ">");
  return v.str();
}

int64_t EvalInt(std::string_view expr) {
  Value v = Eval(expr);
  EXPECT_EQ(v.kind(), Kind::kInt) << expr << " gave " << v.DebugString();
  return v.kind() == Kind::kInt ? v.int_value() : -12345;
}

std::string EvalError(std::string_view expr) {
  Value v = Eval(expr);
  EXPECT_TRUE(v.is_error()) << expr << " gave " << v.DebugString();
  return v.is_error() ? v.error().message : "";
}

std::string CompileError(std::string_view expr, const Env& env = Env()) {
  auto program = env.Compile(expr);
  EXPECT_FALSE(program.ok()) << expr << " compiled";
  return program.ok() ? "" : std::string(program.status().message());
}

Env KubernetesEnv() {
  EnvOptions options;
  options.kubernetes = true;
  return Env(options);
}

TEST(StringFormatTest, EveryVerb) {
  EXPECT_EQ(EvalString("'%s and %d'.format(['str', 42])"), "str and 42");
  EXPECT_EQ(EvalString("'%d'.format([uint(64)])"), "64");
  EXPECT_EQ(EvalString("'%b %b %b %b'.format([5, -5, uint(64), true])"), "101 -101 1000000 1");
  EXPECT_EQ(EvalString("'%o %o %o'.format([11, -11, uint(65535)])"), "13 -13 177777");
  EXPECT_EQ(EvalString("'%x %X %x %X'.format([30, 30, -30, uint(6000)])"), "1e 1E -1e 1770");
  EXPECT_EQ(EvalString("'%x'.format(['Hello world!'])"), "48656c6c6f20776f726c6421");
  EXPECT_EQ(EvalString("'%X'.format([b'\\x00\\x00byte string\\x00'])"),
            "00006279746520737472696E6700");
}

TEST(StringFormatTest, FixedPointAsGoXTextPrintsForEnUs) {
  EXPECT_EQ(EvalString("'%f'.format([2.71828])"), "2.718280");
  EXPECT_EQ(EvalString("'%.3f'.format([1.2345])"), "1.234");  // round half to even
  EXPECT_EQ(EvalString("'%.0f'.format([2.5])"), "2");
  EXPECT_EQ(EvalString("'%.2f'.format([-1234567.891])"), "-1,234,567.89");
  EXPECT_EQ(EvalString("'%f %f %f'.format(['NaN', 'Infinity', '-Infinity'])"),
            "NaN \u221E -\u221E");
  EXPECT_EQ(EvalString("'%.1f'.format([dyn(4.5)])"), "4.5");
}

TEST(StringFormatTest, ScientificTakesThePrecisionAsAWidth) {
  EXPECT_EQ(EvalString("'%e'.format([2.71828])"), "2.718280\u202F\u00D7\u202F10\u2070\u2070");
  EXPECT_EQ(EvalString("'%.6e'.format([1052.032911275])"),
            "1.052033\u202F\u00D7\u202F10\u2070\u00B3");
  EXPECT_EQ(EvalString("'%e'.format([-0.00012])"),
            "-1.200000\u202F\u00D7\u202F10\u207B\u2070\u2074");
  // cel-go v0.26 builds "%<precision>e": six digits always, padded to width.
  EXPECT_EQ(EvalString("'%.2e'.format([2.71828])"), "2.718280\u202F\u00D7\u202F10\u2070\u2070");
  EXPECT_EQ(EvalString("'%.20e'.format([2.71828])"),
            "     2.718280\u202F\u00D7\u202F10\u2070\u2070");
  EXPECT_EQ(EvalString("'%e'.format([double('NaN')])"), "   NaN");
}

TEST(StringFormatTest, EscapingAndText) {
  EXPECT_EQ(EvalString("'no substitution'.format([])"), "no substitution");
  EXPECT_EQ(EvalString("'%% and also %%'.format([])"), "% and also %");
  EXPECT_EQ(EvalString("'%%%s%%'.format(['text'])"), "%text%");
  EXPECT_EQ(EvalString("'ünïcödé %s ☺'.format(['✓'])"), "ünïcödé ✓ ☺");
}

TEST(StringFormatTest, StringClausePrintsEveryKind) {
  EXPECT_EQ(EvalString("'%s %s %s'.format([true, null, 2.71])"), "true null 2.71");
  EXPECT_EQ(EvalString("'%s'.format([0.000000002])"), "2e-09");
  EXPECT_EQ(EvalString("'%s %s'.format([b'xyz', type('a')])"), "xyz string");
  EXPECT_EQ(EvalString("'%s'.format([timestamp('2023-02-03T23:31:20+00:00')])"),
            "2023-02-03T23:31:20Z");
  EXPECT_EQ(EvalString("'%s %s'.format([duration('1h45m47s'), duration('2ns')])"),
            "6347s 0.000000002s");
  EXPECT_EQ(EvalString("'%s %s'.format([double('Inf'), double('-Inf')])"), "+Inf -Inf");
}

TEST(StringFormatTest, ListsAndMapsPrintAsCelLiterals) {
  EXPECT_EQ(EvalString("'%s'.format([['abc', 3.14, null, [9, 8], timestamp("
                       "'2023-02-03T23:31:20Z')]])"),
            R"(["abc", 3.140000, null, [9, 8], timestamp("2023-02-03T23:31:20Z")])");
  EXPECT_EQ(EvalString("'%s'.format([[0.000000002, double('NaN'), double('-Inf')]])"),
            R"([0.000000, "NaN", "-Inf"])");
  EXPECT_EQ(EvalString("'%s'.format([{'key1': b'xyz', 'key5': null, 'key2': duration('2h'), "
                       "'key4': true, 'key3': 2.71828}])"),
            R"({"key1":b"xyz", "key2":duration("7200s"), "key3":2.718280, "key4":true, )"
            R"("key5":null})");
  EXPECT_EQ(EvalString("'%s'.format([{1: 'value1', uint(2): 'value2', true: double('NaN')}])"),
            R"({1:"value1", 2:"value2", true:"NaN"})");
  EXPECT_EQ(EvalString("'%s'.format([['tab\\tquote\"', '\\u00a0']])"),
            R"(["tab\tquote\"", "\u00a0"])");
}

TEST(StringFormatTest, RunTimeErrorsAreWordedAsCelGo) {
  EXPECT_EQ(EvalError("'%d %d %d'.format(dyn([0, 1]))"), "index 2 out of range");
  EXPECT_EQ(EvalError("'filler %'.format(dyn([1]))"), "unexpected end of string");
  EXPECT_EQ(EvalError("'%a'.format(dyn([1]))"),
            "could not parse formatting clause: unrecognized formatting clause \"a\"");
  EXPECT_EQ(EvalError("'%E'.format(dyn([0.5]))"),
            "could not parse formatting clause: unrecognized formatting clause \"E\"");
  EXPECT_EQ(EvalError("'%.34'.format(dyn([5.0]))"),
            "could not parse formatting clause: error while parsing precision: could not find "
            "end of precision specifier");
  EXPECT_EQ(EvalError("'%b'.format(dyn(['abc']))"),
            "error during formatting: only integers and bools can be formatted as binary, was "
            "given string");
  EXPECT_EQ(EvalError("'%d'.format(dyn([duration('30m2s')]))"),
            "error during formatting: decimal clause can only be used on integers, was given "
            "google.protobuf.Duration");
  EXPECT_EQ(EvalError("'%x'.format(dyn([0.5]))"),
            "error during formatting: only integers, byte buffers, and strings can be formatted "
            "as hex, was given double");
  EXPECT_EQ(EvalError("'%s'.format(dyn([optional.none()]))"),
            "error during formatting: string clause can only be used on strings, bools, bytes, "
            "ints, doubles, maps, lists, types, durations, and timestamps, was given "
            "optional_type");
  EXPECT_EQ(EvalError("'%f'.format(dyn(['1.5']))"),
            "error during formatting: fixed-point clause can only be used on doubles, was given "
            "string");
  EXPECT_THAT(EvalError("'%.1001f'.format(dyn([1.0]))"),
              HasSubstr("exceeds maximum allowed precision 1000"));
  // More arguments than clauses is fine at run time.
  EXPECT_EQ(EvalString("'%s'.format(dyn(['a', 'b']))"), "a");
}

TEST(StringFormatTest, ConstantFormatsAreValidatedWhenCompiled) {
  EXPECT_THAT(CompileError("'%s %s'.format(['abc'])"), HasSubstr("index 1 out of range"));
  EXPECT_THAT(CompileError("'%s %s'.format(['abc', 'def', 'ghi'])"),
              HasSubstr("too many arguments supplied to string.format (expected 2, got 3)"));
  EXPECT_THAT(CompileError("'%j'.format([123])"),
              HasSubstr("unrecognized formatting clause \"j\""));
  EXPECT_THAT(CompileError("'int is %d'.format([5.2])"),
              HasSubstr("1:21: error during formatting: decimal clause can only be used on "
                        "integers, was given double"));
  EXPECT_THAT(CompileError("'%s'.format([[1, optional.none()]])"),
              HasSubstr("was given optional_type"));
  EXPECT_THAT(CompileError("'%e'.format([true])"),
              HasSubstr("scientific clause can only be used on doubles, was given bool"));
  // cel-go's validator passes dyn but not the DRA attribute type.
  EXPECT_TRUE(Env::DraSelector().Compile("'%s'.format([dyn(device.driver)]) == 'x'").ok());
  EXPECT_THAT(CompileError("'%s'.format([device.attributes['d'].a]) == 'x'", Env::DraSelector()),
              HasSubstr("was given google.protobuf.Any"));
}

TEST(StringFormatTest, MixedLiteralsAreAllowedUnderFormatInKubernetes) {
  Env env = KubernetesEnv();
  EXPECT_EQ(Eval("'%d %s'.format([1, 'a'])", env).str(), "1 a");
  EXPECT_EQ(Eval("'%s'.format([[1, 'a']])", env).str(), R"([1, "a"])");
  EXPECT_THAT(CompileError("[1, 'a'].size() == 2", env), HasSubstr("expected type 'int'"));
}

TEST(StringsExtensionTest, QuoteEscapes) {
  EXPECT_EQ(EvalString("strings.quote('first\\nsecond')"), "\"first\\nsecond\"");
  EXPECT_EQ(EvalString("strings.quote('bell\\a \"q\" \\\\')"), R"("bell\a \"q\" \\")");
}

TEST(StringsExtensionTest, IndexOfEdgesFollowCelGo) {
  EXPECT_EQ(EvalInt("'hello mellow'.lastIndexOf('')"), 12);
  EXPECT_EQ(EvalInt("'ÿæ☺'.lastIndexOf('')"), 3);  // code points, not bytes
  EXPECT_EQ(EvalInt("''.lastIndexOf('')"), 0);
  EXPECT_EQ(EvalInt("'hello mellow'.lastIndexOf('ello')"), 7);
  EXPECT_EQ(EvalInt("'hello mellow'.lastIndexOf('ello', 6)"), 1);
  EXPECT_EQ(EvalInt("'hello mellow'.lastIndexOf('ello', 20)"), -1);
  EXPECT_EQ(EvalInt("'hello'.indexOf('l', 10)"), -1);
  EXPECT_EQ(EvalInt("'hello'.indexOf('l', 5)"), -1);
  EXPECT_EQ(EvalInt("'hello'.indexOf('', 3)"), 3);
  EXPECT_EQ(EvalInt("'ab'.lastIndexOf('abc')"), -1);
  EXPECT_EQ(EvalError("'hello mellow'.lastIndexOf('ello', -1)"), "index out of range: -1");
  EXPECT_EQ(EvalError("'hello'.indexOf('l', -1)"), "index out of range: -1");
}

TEST(TimestampAccessorTest, UtcByDefault) {
  const std::string t = "timestamp('2009-02-13T23:31:30.123456789Z')";
  EXPECT_EQ(EvalInt(t + ".getFullYear()"), 2009);
  EXPECT_EQ(EvalInt(t + ".getMonth()"), 1);  // 0-based
  EXPECT_EQ(EvalInt(t + ".getDate()"), 13);
  EXPECT_EQ(EvalInt(t + ".getDayOfMonth()"), 12);
  EXPECT_EQ(EvalInt(t + ".getDayOfWeek()"), 5);  // Friday; Sunday is 0
  EXPECT_EQ(EvalInt(t + ".getDayOfYear()"), 43);
  EXPECT_EQ(EvalInt(t + ".getHours()"), 23);
  EXPECT_EQ(EvalInt(t + ".getMinutes()"), 31);
  EXPECT_EQ(EvalInt(t + ".getSeconds()"), 30);
  EXPECT_EQ(EvalInt(t + ".getMilliseconds()"), 123);
  EXPECT_EQ(EvalInt("timestamp('2024-03-03T00:00:00Z').getDayOfWeek()"), 0);
  EXPECT_EQ(EvalInt("timestamp('2024-12-31T00:00:00Z').getDayOfYear()"), 365);  // leap year
}

TEST(TimestampAccessorTest, TimeZonesByNameAndOffset) {
  const std::string t = "timestamp('2023-01-01T02:30:00Z')";
  EXPECT_EQ(EvalInt(t + ".getFullYear('America/Los_Angeles')"), 2022);
  EXPECT_EQ(EvalInt(t + ".getMonth('America/Los_Angeles')"), 11);
  EXPECT_EQ(EvalInt(t + ".getDate('America/Los_Angeles')"), 31);
  EXPECT_EQ(EvalInt(t + ".getHours('America/Los_Angeles')"), 18);
  EXPECT_EQ(EvalInt(t + ".getDayOfWeek('America/Los_Angeles')"), 6);
  EXPECT_EQ(EvalInt(t + ".getDayOfYear('America/Los_Angeles')"), 364);
  // Daylight saving time: -7 in July.
  EXPECT_EQ(EvalInt("timestamp('2023-07-01T12:00:00Z').getHours('America/Los_Angeles')"), 5);
  EXPECT_EQ(EvalInt(t + ".getHours('+05:30')"), 8);
  EXPECT_EQ(EvalInt(t + ".getMinutes('+05:30')"), 0);
  EXPECT_EQ(EvalInt(t + ".getMinutes('-02:45')"), 45);
  EXPECT_EQ(EvalInt(t + ".getHours('-02:45')"), 23);
  EXPECT_EQ(EvalInt(t + ".getHours('UTC')"), 2);
  EXPECT_EQ(EvalInt(t + ".getHours('')"), 2);
  EXPECT_EQ(EvalError(t + ".getHours('Mars/Olympus_Mons')"), "unknown time zone Mars/Olympus_Mons");
  EXPECT_EQ(EvalError(t + ".getHours('/etc/passwd')"), "time: invalid location name");
  EXPECT_EQ(EvalError(t + ".getHours('x:00')"), "strconv.Atoi: parsing \"x\": invalid syntax");
}

TEST(DurationAccessorTest, WholeUnitsTruncatedTowardZero) {
  EXPECT_EQ(EvalInt("duration('1h2m3.5s').getHours()"), 1);
  EXPECT_EQ(EvalInt("duration('1h2m3.5s').getMinutes()"), 62);
  EXPECT_EQ(EvalInt("duration('1h2m3.5s').getSeconds()"), 3723);
  EXPECT_EQ(EvalInt("duration('1h2m3.5s').getMilliseconds()"), 3723500);
  EXPECT_EQ(EvalInt("duration('-90m').getHours()"), -1);
  EXPECT_EQ(EvalInt("duration('-1.5s').getSeconds()"), -1);
}

TEST(OptionalTest, IndexingAnOptionalIsOptionalIndexing) {
  EXPECT_TRUE(Eval("optional.of([1, 2])[0] == optional.of(1)").is_bool(true));
  EXPECT_TRUE(Eval("optional.of([1, 2])[5] == optional.none()").is_bool(true));
  EXPECT_TRUE(Eval("optional.of({'k': 'v'})['k'].value() == 'v'").is_bool(true));
  EXPECT_TRUE(Eval("optional.of({'c': {}}).c['missing'].orValue('dflt') == 'dflt'").is_bool(true));
  EXPECT_TRUE(Eval("optional.none()[0].hasValue()").is_bool(false));
  auto program = Env().Compile("optional.of({'k': 1})['k']");
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->result_type().ToString(), "optional_type(int)");
}

TEST(OptionalTest, HasLooksThroughOptionals) {
  EXPECT_TRUE(Eval("has({'a': {'b': 1}}.?a.b)").is_bool(true));
  EXPECT_TRUE(Eval("has({}.?a.b)").is_bool(false));
  EXPECT_TRUE(Eval("has({'a': {}}.?a.b)").is_bool(false));
  EXPECT_TRUE(Eval("has(optional.of({'c': 1}).c)").is_bool(true));
}

TEST(OptionalTest, SelectionChainsAndLiterals) {
  EXPECT_TRUE(Eval("optional.of({'c': {}}).c.missing == optional.none()").is_bool(true));
  EXPECT_TRUE(Eval("{'a': {'b': 1}}.?a.b.orValue(0) == 1").is_bool(true));
  EXPECT_TRUE(Eval("{'a': {'b': 1}}.?x.b.orValue(0) == 0").is_bool(true));
  EXPECT_TRUE(Eval("[?optional.of(1), ?optional.none(), 3] == [1, 3]").is_bool(true));
  EXPECT_TRUE(Eval("{?'k': optional.none(), 'j': 2} == {'j': 2}").is_bool(true));
  EXPECT_TRUE(Eval("optional.none().or(optional.of(2)).value() == 2").is_bool(true));
  EXPECT_EQ(EvalError("optional.none().value()"), "optional.none() dereference");
}

TEST(OptionalTest, DraSelectorsUseOptionalChaining) {
  Env env = Env::DraSelector();
  auto program = env.Compile(
      "device.attributes['gpu.example.com'].?model.orValue('') == 'a100' && "
      "!device.attributes['gpu.example.com'][?'missing'].hasValue() && "
      "!has(device.attributes['gpu.example.com'].?missing.deeper)");
  ASSERT_TRUE(program.ok()) << program.status();
  Value device = MakeDraDevice("gpu.example.com", {{"model", Value::String("a100")}}, {});
  EXPECT_TRUE(program->Evaluate({device}).is_bool(true));
}

// cel-spec's optionals, timestamps and string_ext files (the cases without
// protobuf messages), with the cases where cel-spec and Kubernetes' cel-go
// disagree kept but skipped, each saying why.
TEST(ConformanceTest, CelSpecOptionalsTimestampsAndStringsExtensionPass) {
  auto result = RunConformanceFile(CANHAZGPU_CEL_TESTDATA "/cel_spec_extras.jsonl");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GE(result->passed, 314);
  EXPECT_LE(result->skipped, 26);
  for (const ConformanceFailure& f : result->failures) {
    ADD_FAILURE() << f.id << ": " << f.expr << "\n expected " << f.expected << "\n actual "
                  << f.actual;
  }
}

}  // namespace
}  // namespace canhazgpu::cel
