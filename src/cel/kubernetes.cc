// The Kubernetes CEL libraries a DRA selector can use (k8s.io/apiserver
// pkg/cel/library): quantity, semver, lists and regex, plus cel-go's sets
// extension from the Kubernetes base environment.
#include "cel/functions.h"
#include "core/strings.h"
#include "re2/re2.h"

namespace canhazgpu::cel {
namespace {

Value FromStatus(const absl::Status& status) { return Value::Error(std::string(status.message())); }

// ---- quantity ----

Value ParseQuantity(const Value* const* a, size_t, EvalContext&) {
  auto q = Quantity::Parse((*a[0]).str());
  if (!q.ok()) return FromStatus(q.status());
  return Value::FromQuantity(*std::move(q));
}
Value IsQuantity(const Value* const* a, size_t, EvalContext&) {
  return Value::Bool(Quantity::Parse((*a[0]).str()).ok());
}
Value QuantitySign(const Value* const* a, size_t, EvalContext&) {
  return Value::Int((*a[0]).quantity().Sign());
}

Value CompareTo(const Value* const* a, size_t, EvalContext&) {
  if ((*a[0]).kind() == Kind::kQuantity)
    return Value::Int((*a[0]).quantity().Compare((*a[1]).quantity()));
  return Value::Int((*a[0]).semver().Compare((*a[1]).semver()));
}
Value IsGreaterThan(const Value* const* a, size_t n, EvalContext& ctx) {
  return Value::Bool(CompareTo(a, n, ctx).int_value() > 0);
}
Value IsLessThan(const Value* const* a, size_t n, EvalContext& ctx) {
  return Value::Bool(CompareTo(a, n, ctx).int_value() < 0);
}
Value AsApproximateFloat(const Value* const* a, size_t, EvalContext&) {
  return Value::Double((*a[0]).quantity().AsApproximateFloat());
}
Value AsInteger(const Value* const* a, size_t, EvalContext&) {
  std::optional<int64_t> v = (*a[0]).quantity().AsInt64();
  if (!v) return Value::Error("cannot convert value to integer");
  return Value::Int(*v);
}
Value IsInteger(const Value* const* a, size_t, EvalContext&) {
  return Value::Bool((*a[0]).quantity().AsInt64().has_value());
}

template <bool kAdd>
Value QuantityArithmetic(const Value* const* a, size_t, EvalContext&) {
  Quantity other =
      (*a[1]).kind() == Kind::kInt ? Quantity::FromInt((*a[1]).int_value()) : (*a[1]).quantity();
  auto result = kAdd ? (*a[0]).quantity().Add(other) : (*a[0]).quantity().Sub(other);
  if (!result.ok()) return FromStatus(result.status());
  return Value::FromQuantity(*std::move(result));
}

// ---- semver ----

Value ParseSemver(const Value* const* a, size_t n, EvalContext&) {
  auto v = Semver::Parse((*a[0]).str(), n == 2 && (*a[1]).bool_value());
  if (!v.ok()) return FromStatus(v.status());
  return Value::FromSemver(*std::move(v));
}
Value IsSemver(const Value* const* a, size_t n, EvalContext&) {
  return Value::Bool(Semver::Parse((*a[0]).str(), n == 2 && (*a[1]).bool_value()).ok());
}
Value Major(const Value* const* a, size_t, EvalContext&) {
  return Value::Int(static_cast<int64_t>((*a[0]).semver().major));
}
Value Minor(const Value* const* a, size_t, EvalContext&) {
  return Value::Int(static_cast<int64_t>((*a[0]).semver().minor));
}
Value Patch(const Value* const* a, size_t, EvalContext&) {
  return Value::Int(static_cast<int64_t>((*a[0]).semver().patch));
}

// ---- lists ----

Value IsSorted(const Value* const* a, size_t, EvalContext&) {
  const ValueList& list = (*a[0]).list();
  for (size_t i = 1; i < list.size(); ++i) {
    Order o = Compare(list[i - 1], list[i]);
    if (o == Order::kNoOverload) return NoOverload("isSorted");
    if (o == Order::kGreater) return Value::Bool(false);
  }
  return Value::Bool(true);
}

Value Sum(const Value* const* a, size_t, EvalContext& ctx) {
  const ValueList& list = (*a[0]).list();
  if (list.empty()) return Value::Int(0);
  Value total = list[0];
  const FunctionGroup* plus = Functions().Find("_+_", false, 2);
  for (size_t i = 1; i < list.size(); ++i) {
    if (list[i].kind() != total.kind()) return NoOverload("sum");
    const Value* pair[2] = {&total, &list[i]};
    total = Dispatch(*plus, pair, 2, ctx);
    if (total.is_error()) return total;
  }
  if (total.kind() != Kind::kInt && total.kind() != Kind::kUint && total.kind() != Kind::kDouble &&
      total.kind() != Kind::kDuration) {
    return NoOverload("sum");
  }
  return total;
}

template <bool kMin>
Value MinMax(const Value* const* a, size_t, EvalContext&) {
  const ValueList& list = (*a[0]).list();
  if (list.empty()) return Value::Error(StrCat(kMin ? "min" : "max", " called on empty list"));
  const Value* best = &list[0];
  for (size_t i = 1; i < list.size(); ++i) {
    Order o = Compare(list[i], *best);
    if (o == Order::kNoOverload) return NoOverload(kMin ? "min" : "max");
    if ((kMin && o == Order::kLess) || (!kMin && o == Order::kGreater)) best = &list[i];
  }
  return *best;
}

// The index of the first (or, `last`, the last) element of `list` equal to
// `v`, or -1; nullopt once over the cost limit.
std::optional<int64_t> FindInList(const ValueList& list, const Value& v, bool last,
                                  EvalContext& ctx) {
  StepBudget steps = ctx.Steps();
  int64_t found = -1;
  for (size_t n = 0; n < list.size() && !steps.spent(); ++n) {
    const size_t i = last ? list.size() - 1 - n : n;
    if (Equal(list[i], v, &steps).value_or(false)) {
      found = static_cast<int64_t>(i);
      break;
    }
  }
  if (!ctx.Charge(steps)) return std::nullopt;
  return found;
}

Value ListIndexOf(const Value* const* a, size_t, EvalContext& ctx) {
  std::optional<int64_t> i = FindInList((*a[0]).list(), (*a[1]), /*last=*/false, ctx);
  return i ? Value::Int(*i) : CostLimitExceeded();
}

Value ListLastIndexOf(const Value* const* a, size_t, EvalContext& ctx) {
  std::optional<int64_t> i = FindInList((*a[0]).list(), (*a[1]), /*last=*/true, ctx);
  return i ? Value::Int(*i) : CostLimitExceeded();
}

// Whether every element of `b` is in `a` (`all`) or any one is.
Value SetsCheck(const ValueList& a, const ValueList& b, bool all, EvalContext& ctx) {
  for (const Value& v : b) {
    std::optional<int64_t> i = FindInList(a, v, /*last=*/false, ctx);
    if (!i) return CostLimitExceeded();
    if ((*i >= 0) != all) return Value::Bool(!all);
  }
  return Value::Bool(all);
}

Value SetsContains(const Value* const* a, size_t, EvalContext& ctx) {
  return SetsCheck((*a[0]).list(), (*a[1]).list(), /*all=*/true, ctx);
}
Value SetsEquivalent(const Value* const* a, size_t, EvalContext& ctx) {
  Value forward = SetsCheck((*a[0]).list(), (*a[1]).list(), /*all=*/true, ctx);
  if (forward.is_error() || !forward.bool_value()) return forward;
  return SetsCheck((*a[1]).list(), (*a[0]).list(), /*all=*/true, ctx);
}
Value SetsIntersects(const Value* const* a, size_t, EvalContext& ctx) {
  return SetsCheck((*a[0]).list(), (*a[1]).list(), /*all=*/false, ctx);
}

// ---- regex ----

// The constant pattern compiled by the checker, or this call's pattern.
const RE2* Pattern(const Value& pattern, EvalContext& ctx, std::unique_ptr<RE2>* holder,
                   Value* error) {
  if (ctx.regex != nullptr) return ctx.regex;
  *holder = std::make_unique<RE2>(pattern.str(), RE2::Quiet);
  if (!(*holder)->ok()) {
    *error = Value::Error(StrCat("Illegal regex '", pattern.str(), "': ", (*holder)->error()));
    return nullptr;
  }
  return holder->get();
}

Value Find(const Value* const* a, size_t, EvalContext& ctx) {
  std::unique_ptr<RE2> holder;
  Value error;
  const RE2* re = Pattern((*a[1]), ctx, &holder, &error);
  if (re == nullptr) return error;
  re2::StringPiece match;
  if (!re->Match((*a[0]).str(), 0, (*a[0]).str().size(), RE2::UNANCHORED, &match, 1))
    return Value::String("");
  return Value::String(std::string(match.data(), match.size()));
}

Value FindAll(const Value* const* a, size_t n, EvalContext& ctx) {
  std::unique_ptr<RE2> holder;
  Value error;
  const RE2* re = Pattern((*a[1]), ctx, &holder, &error);
  if (re == nullptr) return error;
  int64_t limit = n == 3 ? (*a[2]).int_value() : -1;
  const std::string& s = (*a[0]).str();
  ValueList matches;
  size_t pos = 0;
  while (pos <= s.size() && (limit < 0 || static_cast<int64_t>(matches.size()) < limit)) {
    re2::StringPiece match;
    if (!re->Match(s, pos, s.size(), RE2::UNANCHORED, &match, 1)) break;
    matches.push_back(Value::String(std::string(match.data(), match.size())));
    size_t end = match.data() - s.data() + match.size();
    pos = match.empty() ? end + 1 : end;
    if (!ctx.Charge(1)) return CostLimitExceeded();
  }
  return Value::List(std::move(matches));
}

}  // namespace

void RegisterKubernetes(FunctionRegistry& r) {
  r.Add("quantity(string) -> Quantity", ParseQuantity);
  r.Add("isQuantity(string) -> bool", IsQuantity);
  r.Add("sign(Quantity) -> int", QuantitySign);
  r.Add("<Quantity>.compareTo(Quantity) -> int", CompareTo);
  r.Add("<Quantity>.isGreaterThan(Quantity) -> bool", IsGreaterThan);
  r.Add("<Quantity>.isLessThan(Quantity) -> bool", IsLessThan);
  r.Add("<Quantity>.asApproximateFloat() -> double", AsApproximateFloat);
  r.Add("<Quantity>.asInteger() -> int", AsInteger);
  r.Add("<Quantity>.isInteger() -> bool", IsInteger);
  r.Add("<Quantity>.add(Quantity) -> Quantity", QuantityArithmetic<true>);
  r.Add("<Quantity>.add(int) -> Quantity", QuantityArithmetic<true>);
  r.Add("<Quantity>.sub(Quantity) -> Quantity", QuantityArithmetic<false>);
  r.Add("<Quantity>.sub(int) -> Quantity", QuantityArithmetic<false>);

  r.Add("semver(string) -> Semver", ParseSemver);
  r.Add("semver(string, bool) -> Semver", ParseSemver);
  r.Add("isSemver(string) -> bool", IsSemver);
  r.Add("isSemver(string, bool) -> bool", IsSemver);
  r.Add("<Semver>.major() -> int", Major);
  r.Add("<Semver>.minor() -> int", Minor);
  r.Add("<Semver>.patch() -> int", Patch);
  r.Add("<Semver>.compareTo(Semver) -> int", CompareTo);
  r.Add("<Semver>.isGreaterThan(Semver) -> bool", IsGreaterThan);
  r.Add("<Semver>.isLessThan(Semver) -> bool", IsLessThan);

  for (std::string_view t :
       {"int", "uint", "double", "bool", "string", "bytes", "Duration", "Timestamp"}) {
    r.Add(StrCat("<list(", t, ")>.isSorted() -> bool"), IsSorted);
    r.Add(StrCat("<list(", t, ")>.min() -> ", t), MinMax<true>);
    r.Add(StrCat("<list(", t, ")>.max() -> ", t), MinMax<false>);
  }
  for (std::string_view t : {"int", "uint", "double", "Duration"}) {
    r.Add(StrCat("<list(", t, ")>.sum() -> ", t), Sum);
  }
  r.Add("<list(A)>.indexOf(A) -> int", ListIndexOf);
  r.Add("<list(A)>.lastIndexOf(A) -> int", ListLastIndexOf);
  r.Add("sets.contains(list(A), list(A)) -> bool", SetsContains);
  r.Add("sets.equivalent(list(A), list(A)) -> bool", SetsEquivalent);
  r.Add("sets.intersects(list(A), list(A)) -> bool", SetsIntersects);

  r.Add("<string>.find(string) -> string", Find);
  r.Add("<string>.findAll(string) -> list(string)", FindAll);
  r.Add("<string>.findAll(string, int) -> list(string)", FindAll);
}

}  // namespace canhazgpu::cel
