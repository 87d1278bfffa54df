// libFuzzer target: CEL source text as a user types it into --where. Each
// input is compiled three ways (the DRA selector environment, plain CEL, and
// plain CEL without the type checker) and, where it compiles, evaluated
// against a fixed DRA device under the default cost limit. Beyond crashes,
// leaks and timeouts it checks that a compile error is one bounded line and
// that the planner's direct paths give what the general path gives.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cel/dra_device.h"
#include "cel/program.h"

namespace canhazgpu::cel {
namespace {

const Value& Device() {
  static const Value* device = new Value(
      MakeDraDevice("gpu.canhazgpu.dev",
                    {{"type", Value::String("gpu")},
                     {"productName", Value::String("NVIDIA A100-SXM4-40GB")},
                     {"index", Value::Int(0)},
                     {"cudaComputeCapability", Value::FromSemver(*Semver::Parse("8.0.0"))},
                     {"driverVersion", Value::FromSemver(*Semver::Parse("550.54.15"))},
                     {"migCapable", Value::Bool(true)},
                     {"resource.kubernetes.io/pcieRoot", Value::String("pci0000:00")}},
                    {{"memory", Value::FromQuantity(*Quantity::Parse("40Gi"))}}));
  return *device;
}

Env DraEnv(bool plan) {
  EnvOptions options = Env::DraSelector().options();
  options.plan = plan;
  Env env(options);
  env.Declare("device", Type::Object("kubernetes.DRADevice"));
  return env;
}

void CheckMessage(std::string_view message) {
  if (message.size() > 600 || message.find('\n') != std::string_view::npos) std::abort();
}

// Compiles with and without the planner; both must agree on everything
// but the cost.
void CompileAndEvaluate(const Env& planned_env, const Env& general_env, std::string_view source) {
  absl::StatusOr<Program> planned = planned_env.Compile(source);
  absl::StatusOr<Program> general = general_env.Compile(source);
  if (planned.ok() != general.ok()) std::abort();
  if (!planned.ok()) {
    CheckMessage(std::string(planned.status().message()));
    return;
  }
  const std::vector<Value> variables(planned_env.declarations().size(), Device());
  int64_t cost = 0;
  Value fast = planned->Evaluate(variables.data(), &cost);
  Value slow = general->Evaluate(variables.data(), &cost);
  if (fast.is_error() != slow.is_error()) std::abort();
  if (fast.is_error()) {
    CheckMessage(planned->DescribeError(fast));
    if (planned->DescribeError(fast) != general->DescribeError(slow)) std::abort();
  } else if (fast.DebugString() != slow.DebugString()) {
    std::abort();
  }
}

}  // namespace
}  // namespace canhazgpu::cel

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using canhazgpu::cel::Env;
  using canhazgpu::cel::EnvOptions;
  std::string_view source(reinterpret_cast<const char*>(data), size);
  static const Env* dra_planned = new Env(canhazgpu::cel::DraEnv(true));
  static const Env* dra_general = new Env(canhazgpu::cel::DraEnv(false));
  static const Env* plain = new Env();
  static const Env* plain_general = new Env(EnvOptions{.plan = false});
  static const Env* unchecked = new Env(EnvOptions{.type_check = false});
  static const Env* unchecked_general = new Env(EnvOptions{.type_check = false, .plan = false});
  canhazgpu::cel::CompileAndEvaluate(*dra_planned, *dra_general, source);
  canhazgpu::cel::CompileAndEvaluate(*plain, *plain_general, source);
  canhazgpu::cel::CompileAndEvaluate(*unchecked, *unchecked_general, source);
  return 0;
}
