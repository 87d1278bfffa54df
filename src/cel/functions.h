// The function library: every function and operator the evaluator knows,
// declared by signature strings ("<string>.contains(string) -> bool") that
// drive both the checker (static overload resolution) and run-time dispatch
// (by the kinds of the argument values). Operators use cel-go's names
// ("_+_", "@in", "_[_]").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cel/types.h"
#include "cel/value.h"

namespace re2 {
class RE2;
}

namespace canhazgpu::cel {

// Timestamps span years 0001..9999 (cel-spec); durations are nanoseconds.
inline constexpr int64_t kNanosPerSecond = 1'000'000'000;
inline constexpr int64_t kMinTimestampSeconds = -62135596800;  // 0001-01-01T00:00:00Z
inline constexpr int64_t kMaxTimestampSeconds = 253402300799;  // 9999-12-31T23:59:59Z

// Kubernetes' per-evaluation limit for DRA selectors
// (CELSelectorExpressionMaxCost).
inline constexpr int64_t kDefaultCostLimit = 1'000'000;

// State of one evaluation that functions may use.
struct EvalContext {
  int64_t cost = 0;
  int64_t cost_limit = kDefaultCostLimit;
  // The pre-compiled constant pattern of the regex call being made, if any.
  const re2::RE2* regex = nullptr;

  // Adds work proportional to a size; false once over the limit.
  bool Charge(int64_t units) {
    cost += units;
    return cost <= cost_limit;
  }

  // A budget for deep comparisons and map lookups of what the limit leaves,
  // at ten steps a unit (as `in` over a list is charged), and the charge of
  // what it used: false once over the limit or spent.
  StepBudget Steps() const {
    const int64_t left = cost_limit - cost;
    if (left <= 0) return StepBudget(9);
    return StepBudget(left >= StepBudget::kUnlimited / 10 ? StepBudget::kUnlimited : left * 10 + 9);
  }
  bool Charge(const StepBudget& steps) { return Charge(steps.used() / 10) && !steps.spent(); }
};

// Receives the arguments (the receiver first for member calls); never sees
// an error argument (the evaluator returns those before calling).
using FunctionImpl = Value (*)(const Value* const* args, size_t count, EvalContext& ctx);

struct Overload {
  std::vector<Type> params;  // receiver first for member functions
  Type result;
  FunctionImpl impl;
};

// All overloads of one name, call style and arity.
struct FunctionGroup {
  std::string name;
  bool member = false;
  size_t arity = 0;  // including the receiver
  std::vector<Overload> overloads;
  // The first overload's implementation takes any kinds the declared
  // overloads do not match (indexing a list with a uint or an integral
  // double at run time) and reports its own errors.
  bool lenient = false;
};

class FunctionRegistry {
 public:
  const FunctionGroup* Find(std::string_view name, bool member, size_t arity) const;
  // Any group of this name, for "wrong number of arguments" vs "unknown".
  bool HasName(std::string_view name) const;

  // Adds an overload: "name(T, T) -> R" or "<Recv>.name(T) -> R". Type
  // aliases: Quantity, Semver, Duration, Timestamp.
  void Add(std::string_view signature, FunctionImpl impl);
  void MarkLenient(std::string_view name);

 private:
  std::vector<FunctionGroup> groups_;
};

// The full library: standard CEL, strings extension v2, optionals, sets,
// the Kubernetes quantity, semver, lists and regex libraries.
const FunctionRegistry& Functions();

// Calls the overload of the group matching the argument kinds.
Value Dispatch(const FunctionGroup& group, const Value* const* args, size_t count,
               EvalContext& ctx);

// Whether a run-time value can be passed where `type` is declared.
bool KindMatches(const Type& type, const Value& value);
// The first overload of `group` the arguments' kinds match, or -1.
int MatchingOverload(const FunctionGroup& group, const Value* const* args, size_t count);

// Library parts, each in its own file.
void RegisterStandard(FunctionRegistry& registry);
void RegisterConversions(FunctionRegistry& registry);
void RegisterStrings(FunctionRegistry& registry);
void RegisterKubernetes(FunctionRegistry& registry);
void RegisterOptionals(FunctionRegistry& registry);
// string.format (format.cc), called by RegisterStrings.
void RegisterFormat(FunctionRegistry& registry);
// Timestamp and duration accessors: getFullYear, getHours, ... (time.cc).
void RegisterTime(FunctionRegistry& registry);

// Shared helpers for the library files.
Value NoOverload(std::string_view function);
// The error of a function that went over the cost limit.
Value CostLimitExceeded();
std::u32string DecodeUtf8(std::string_view s);
std::string EncodeUtf8(std::u32string_view s);
bool IsValidUtf8(std::string_view s);
size_t CodePointCount(std::string_view s);
// What string(v) gives for a scalar (int, uint, double, bool, string, bytes,
// timestamp, duration); an error value for other kinds or invalid UTF-8.
Value ConvertToString(const Value& v);
// The checks string.format's clauses make on argument types, shared by the
// run time (format.cc) and the checker's validation of constant format
// strings (checker.cc). `verb` is the clause letter: s d f e b x X o.
// Whether a value (or a static type, by kind) suits the clause, and the
// error cel-go reports when it does not, for a type named `type_name`.
bool FormatVerbAccepts(char verb, Type::Kind kind);
std::string FormatClauseError(char verb, std::string_view type_name);
// Walks a format string as cel-go's strings extension v2 does, calling
// `clause(index, verb, precision)` (precision -1 when none) for each
// clause with `arg_count` arguments; returns cel-go's message for the
// first syntax or cardinality error, or "" when the string is well formed
// (the text between clauses is written with `text`).
class FormatVisitor {
 public:
  virtual ~FormatVisitor() = default;
  virtual void Text(std::string_view text) = 0;
  // An error message ends the walk.
  virtual std::string Clause(size_t index, char verb, int precision) = 0;
};
std::string WalkFormat(std::string_view format, size_t arg_count, FormatVisitor& visitor);

}  // namespace canhazgpu::cel
