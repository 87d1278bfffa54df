// CEL optional values (cel.OptionalTypes, on in Kubernetes since 1.28):
// optional.of/none/ofNonZeroValue and the hasValue/value/orValue/or members.
// The .? and [?] syntax is handled by the evaluator and _[?_].
#include "cel/functions.h"

namespace canhazgpu::cel {
namespace {

bool IsZeroValue(const Value& v) {
  switch (v.kind()) {
    case Kind::kNull:
      return true;
    case Kind::kBool:
      return !v.bool_value();
    case Kind::kInt:
      return v.int_value() == 0;
    case Kind::kUint:
      return v.uint_value() == 0;
    case Kind::kDouble:
      return v.double_value() == 0;
    case Kind::kString:
    case Kind::kBytes:
      return v.str().empty();
    case Kind::kList:
      return v.list().empty();
    case Kind::kMap:
      return v.map().entries.empty();
    case Kind::kDuration:
      return v.duration_nanos() == 0;
    case Kind::kTimestamp:
      return v.timestamp_seconds() == 0 && v.timestamp_nanos() == 0;
    default:
      return false;
  }
}

Value Of(const Value* const* a, size_t, EvalContext&) { return Value::OptionalOf((*a[0])); }
Value None(const Value* const*, size_t, EvalContext&) { return Value::OptionalNone(); }
Value OfNonZero(const Value* const* a, size_t, EvalContext&) {
  return IsZeroValue((*a[0])) ? Value::OptionalNone() : Value::OptionalOf((*a[0]));
}
Value HasValue(const Value* const* a, size_t, EvalContext&) {
  return Value::Bool((*a[0]).optional_value() != nullptr);
}
Value GetValue(const Value* const* a, size_t, EvalContext&) {
  if ((*a[0]).optional_value() == nullptr) return Value::Error("optional.none() dereference");
  return *(*a[0]).optional_value();
}
Value OrValue(const Value* const* a, size_t, EvalContext&) {
  return (*a[0]).optional_value() != nullptr ? *(*a[0]).optional_value() : (*a[1]);
}
Value Or(const Value* const* a, size_t, EvalContext&) {
  return (*a[0]).optional_value() != nullptr ? (*a[0]) : (*a[1]);
}

}  // namespace

void RegisterOptionals(FunctionRegistry& r) {
  r.Add("optional.of(A) -> optional_type(A)", Of);
  r.Add("optional.none() -> optional_type(dyn)", None);
  r.Add("optional.ofNonZeroValue(A) -> optional_type(A)", OfNonZero);
  r.Add("<optional_type(A)>.hasValue() -> bool", HasValue);
  r.Add("<optional_type(A)>.value() -> A", GetValue);
  r.Add("<optional_type(A)>.orValue(A) -> A", OrValue);
  r.Add("<optional_type(A)>.or(optional_type(A)) -> optional_type(A)", Or);
}

}  // namespace canhazgpu::cel
