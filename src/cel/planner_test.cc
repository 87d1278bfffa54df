// The planner's direct paths must never change a result: every expression
// here is compiled twice, planned and not, and evaluated over devices that
// take each direct path and each way out of it (missing domain, missing
// attribute, another kind, keys in another order, keys not from the pool).
#include <string>
#include <vector>

#include "cel/dra_device.h"
#include "cel/program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cel {
namespace {

using ::testing::HasSubstr;

constexpr char kDomain[] = "gpu.canhazgpu.dev";

Value Quantity(std::string_view text) { return Value::FromQuantity(*Quantity::Parse(text)); }
Value Version(std::string_view text) { return Value::FromSemver(*Semver::Parse(text)); }

Value A100() {
  return MakeDraDevice(kDomain,
                       {{"productName", Value::String("NVIDIA A100-SXM4-40GB")},
                        {"index", Value::Int(0)},
                        {"cudaComputeCapability", Version("8.0.0")},
                        {"driverVersion", Version("550.54.15")}},
                       {{"memory", Quantity("40Gi")}});
}

// Other key order, smaller, older.
Value T4() {
  return MakeDraDevice(kDomain,
                       {{"driverVersion", Version("470.1.0")},
                        {"cudaComputeCapability", Version("7.5.0")},
                        {"index", Value::Int(3)},
                        {"productName", Value::String("Tesla T4")}},
                       {{"memory", Quantity("16Gi")}});
}

// The attributes the selectors read, of other kinds.
Value OtherKinds() {
  return MakeDraDevice(kDomain,
                       {{"productName", Value::Int(7)},
                        {"index", Value::String("zero")},
                        {"cudaComputeCapability", Value::String("8.0")},
                        {"driverVersion", Value::Bool(true)}},
                       {{"memory", Value::Int(1)}});
}

// Nothing in our domain: device.attributes["gpu.canhazgpu.dev"] is an
// empty map, and every attribute is missing.
Value OtherDomain() {
  return MakeDraDevice(kDomain, {{"other.example.com/productName", Value::String("x")}},
                       {{"other.example.com/memory", Quantity("1Gi")}});
}

// Built by hand with ordinary string keys, none from the key pool.
Value UnpooledKeys() {
  auto map = [](std::vector<std::pair<std::string, Value>> entries, bool empty_default) {
    MapData data;
    data.missing_key_is_empty_map = empty_default;
    for (auto& [key, value] : entries) data.entries.emplace_back(Value::String(key), value);
    return Value::Map(std::move(data));
  };
  Value attributes = map({{kDomain, map({{"productName", Value::String("NVIDIA A100-SXM4-40GB")},
                                         {"index", Value::Int(1)},
                                         {"cudaComputeCapability", Version("9.0.0")},
                                         {"driverVersion", Version("560.1.0")}},
                                        false)}},
                         true);
  Value capacity = map({{kDomain, map({{"memory", Quantity("80Gi")}}, false)}}, true);
  return map(
      {{"driver", Value::String(kDomain)}, {"attributes", attributes}, {"capacity", capacity}},
      false);
}

const std::vector<std::string>& Selectors() {
  static const std::vector<std::string> selectors = {
      // The seeds' selectors and their conjunction.
      R"(device.capacity["gpu.canhazgpu.dev"].memory.compareTo(quantity("40Gi")) >= 0)",
      R"(device.attributes["gpu.canhazgpu.dev"].productName == "NVIDIA A100-SXM4-40GB")",
      R"(device.attributes["gpu.canhazgpu.dev"].cudaComputeCapability.compareTo(semver("8.0.0")) >= 0)",
      R"(device.capacity["gpu.canhazgpu.dev"].memory.compareTo(quantity("40Gi")) >= 0 &&
         device.attributes["gpu.canhazgpu.dev"].productName == "NVIDIA A100-SXM4-40GB" &&
         device.attributes["gpu.canhazgpu.dev"].cudaComputeCapability.compareTo(semver("8.0.0")) >= 0)",
      R"(device.attributes["gpu.canhazgpu.dev"].driverVersion.major() >= 1 &&
         device.capacity["gpu.canhazgpu.dev"].memory.isGreaterThan(quantity("1Mi")))",
      // Each relation, the constant on either side, compareTo against other integers.
      R"(device.attributes["gpu.canhazgpu.dev"].index < 2)",
      R"(2 > device.attributes["gpu.canhazgpu.dev"].index)",
      R"(device.attributes["gpu.canhazgpu.dev"].index != 0)",
      R"(device.attributes["gpu.canhazgpu.dev"].index <= 0u)",
      R"(device.attributes["gpu.canhazgpu.dev"].index == 0.0)",
      R"("Tesla T4" != device.attributes["gpu.canhazgpu.dev"].productName)",
      R"(device.attributes["gpu.canhazgpu.dev"].productName >= "O")",
      R"(device.attributes["gpu.canhazgpu.dev"].productName < "O")",
      R"(0 <= device.capacity["gpu.canhazgpu.dev"].memory.compareTo(quantity("40Gi")))",
      R"(device.capacity["gpu.canhazgpu.dev"].memory.compareTo(quantity("40Gi")) == 1)",
      R"(device.capacity["gpu.canhazgpu.dev"].memory.compareTo(quantity("40Gi")) < -1)",
      R"(device.attributes["gpu.canhazgpu.dev"].cudaComputeCapability.compareTo(semver("7.5.0")) > 0)",
      R"(device.attributes["gpu.canhazgpu.dev"].driverVersion.major() >= 500)",
      // The ordering methods, right and wrong receivers.
      R"(device.capacity["gpu.canhazgpu.dev"].memory.isLessThan(quantity("40Gi")))",
      R"(device.attributes["gpu.canhazgpu.dev"].cudaComputeCapability.isGreaterThan(semver("8.0.0")))",
      R"(device.attributes["gpu.canhazgpu.dev"].cudaComputeCapability.isLessThan(semver("8.0.0")))",
      R"(device.attributes["gpu.canhazgpu.dev"].productName.isGreaterThan(quantity("1")))",
      R"(device.attributes["gpu.canhazgpu.dev"].index.isLessThan(semver("1.0.0")))",
      R"(device.attributes["gpu.canhazgpu.dev"].missing.isGreaterThan(quantity("1Mi")) || true)",
      R"(device.capacity["gpu.canhazgpu.dev"].memory.isGreaterThan(quantity("1Mi")) &&
         device.attributes["gpu.canhazgpu.dev"].cudaComputeCapability.isLessThan(semver("10.0.0")))",
      // Missing attributes, absorbed or not; has() guards.
      R"(device.attributes["gpu.canhazgpu.dev"].missing == "x" || true)",
      R"(device.attributes["gpu.canhazgpu.dev"].missing == "x" && false)",
      R"(1 == 1 && device.attributes["gpu.canhazgpu.dev"].missing == "x")",
      R"(has(device.attributes["gpu.canhazgpu.dev"].productName) &&
         device.attributes["gpu.canhazgpu.dev"].productName == "Tesla T4")",
      R"(device.attributes["other.example.com"].productName == "x")",
      // Chains: || and &&, nested both ways, errors at each position.
      R"(device.attributes["gpu.canhazgpu.dev"].index == 3 ||
         device.attributes["gpu.canhazgpu.dev"].productName == "x" ||
         device.capacity["gpu.canhazgpu.dev"].memory.compareTo(quantity("80Gi")) == 0)",
      R"((device.attributes["gpu.canhazgpu.dev"].index == 0 &&
          device.attributes["gpu.canhazgpu.dev"].productName.startsWith("NVIDIA")) ||
         (device.attributes["gpu.canhazgpu.dev"].index == 3 &&
          device.attributes["gpu.canhazgpu.dev"].missing == 1))",
      R"(device.attributes["gpu.canhazgpu.dev"].index >= 0 &&
         (device.attributes["gpu.canhazgpu.dev"].productName == "x" ||
          device.attributes["gpu.canhazgpu.dev"].cudaComputeCapability.compareTo(semver("8.0.0")) >= 0) &&
         device.capacity["gpu.canhazgpu.dev"].memory.compareTo(quantity("1Gi")) > 0)",
      R"(device.attributes["gpu.canhazgpu.dev"].missing == 1 &&
         device.attributes["gpu.canhazgpu.dev"].other == 2 &&
         device.attributes["gpu.canhazgpu.dev"].index == 0)",
      // Chains from comprehension and bind variables.
      R"(["productName", "index"].all(k, k in device.attributes["gpu.canhazgpu.dev"]))",
      R"([0, 1, 2].exists(i, device.attributes["gpu.canhazgpu.dev"].index == i))",
      R"(cel.bind(a, device.attributes["gpu.canhazgpu.dev"],
                  a.productName == "NVIDIA A100-SXM4-40GB" && a.index == 0))",
      R"(cel.bind(a, device.attributes["gpu.canhazgpu.dev"], a.index == 0))",
      // A chain that is the whole expression, and one that is an argument.
      R"(device.attributes["gpu.canhazgpu.dev"].index)",
      R"(device.attributes["gpu.canhazgpu.dev"].productName.startsWith("NVIDIA"))",
      R"(device.attributes.exists(d, d == "gpu.canhazgpu.dev" &&
                                     device.attributes[d].productName == "Tesla T4"))",
  };
  return selectors;
}

EnvOptions DraOptions(bool plan) {
  EnvOptions options = Env::DraSelector().options();
  options.plan = plan;
  return options;
}

Program CompileSelector(const std::string& source, bool plan) {
  Env env(DraOptions(plan));
  env.Declare("device", Type::Object("kubernetes.DRADevice"));
  auto program = env.Compile(source);
  EXPECT_TRUE(program.ok()) << source << ": " << program.status();
  return *std::move(program);
}

// The same answer, error message and position; the same cost where no
// && or || decides how much of the expression runs.
void ExpectSameResult(const Program& planned, const Program& general, const Value& device,
                      const std::string& what) {
  int64_t planned_cost = 0, general_cost = 0;
  // Twice: the first evaluation learns the lookup positions, the second uses them.
  for (int round = 0; round < 2; ++round) {
    Value fast = planned.Evaluate(&device, &planned_cost);
    Value slow = general.Evaluate(&device, &general_cost);
    EXPECT_EQ(fast.DebugString(), slow.DebugString()) << what;
    if (fast.is_error() && slow.is_error()) {
      EXPECT_EQ(planned.DescribeError(fast), general.DescribeError(slow)) << what;
    }
    if (what.find("&&") == std::string::npos && what.find("||") == std::string::npos) {
      EXPECT_EQ(planned_cost, general_cost) << what;
    }
  }
}

TEST(PlannerTest, PlannedAndGeneralPathsAgreeOnEveryDevice) {
  const std::vector<std::pair<std::string, Value>> devices = {
      {"A100", A100()},
      {"T4", T4()},
      {"other kinds", OtherKinds()},
      {"other domain", OtherDomain()},
      {"unpooled keys", UnpooledKeys()},
  };
  for (const std::string& source : Selectors()) {
    Program planned = CompileSelector(source, true);
    Program general = CompileSelector(source, false);
    // Devices in turn and then again in reverse, so each node's remembered
    // positions are sometimes right and sometimes wrong.
    for (size_t i = 0; i < 2 * devices.size(); ++i) {
      size_t d = i < devices.size() ? i : 2 * devices.size() - 1 - i;
      ExpectSameResult(planned, general, devices[d].second, devices[d].first + ": " + source);
    }
  }
}

TEST(PlannerTest, TheSeedSelectorsGiveTheExpectedAnswers) {
  const std::string& conjunction = Selectors()[3];
  Program program = CompileSelector(conjunction, true);
  Value a100 = A100(), t4 = T4(), unpooled = UnpooledKeys();
  EXPECT_TRUE(program.Evaluate(&a100).is_bool(true));
  EXPECT_TRUE(program.Evaluate(&t4).is_bool(false));
  EXPECT_TRUE(program.Evaluate(&unpooled).is_bool(true));
  Value other = OtherDomain();
  Value missing = program.Evaluate(&other);
  ASSERT_TRUE(missing.is_error());
  EXPECT_THAT(program.DescribeError(missing), HasSubstr("no such key: memory"));
}

// Without the checker, && and || meet operands that are not bools: the
// error must be the one the nested operators give, at their position.
TEST(PlannerTest, ChainsReportTheNestedOperatorsErrors) {
  const std::vector<std::string> cases = {
      "1 && true && true",  "true && 1 && true",  "true && true && 1",
      "1 && 1/0 == 1 && 2", "1/0 == 1 && 1 && 2", "1 && false && 1/0 == 1",
      "1 || 2 || false",    "false || 1 || true", "(1 && 2) || (3 && true)",
      "true && (1 || 2)",   "1/0 == 1 || 2 || 3", "(true && 1) && (2 || false)",
  };
  for (const std::string& source : cases) {
    EnvOptions options;
    options.type_check = false;
    Env planned_env(options);
    options.plan = false;
    Env general_env(options);
    auto planned = planned_env.Compile(source);
    auto general = general_env.Compile(source);
    ASSERT_TRUE(planned.ok() && general.ok()) << source;
    Value fast = planned->Evaluate(nullptr);
    Value slow = general->Evaluate(nullptr);
    EXPECT_EQ(fast.DebugString(), slow.DebugString()) << source;
    if (fast.is_error() && slow.is_error()) {
      EXPECT_EQ(planned->DescribeError(fast), general->DescribeError(slow)) << source;
    }
  }
}

TEST(PlannerTest, PooledKeysAreRecognisedByAddress) {
  Value key = Value::Key("productName");
  EXPECT_EQ(key.kind(), Kind::kString);
  EXPECT_EQ(key.str(), "productName");
  EXPECT_EQ(key.identity(), Value::InternedKey("productName"));
  EXPECT_EQ(Value::Key("productName").identity(), key.identity());
  EXPECT_NE(Value::String("productName").identity(), key.identity());
  EXPECT_NE(Value::InternedKey("index"), Value::InternedKey("productName"));
}

}  // namespace
}  // namespace canhazgpu::cel
