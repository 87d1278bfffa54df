#include "cel/functions.h"

#include <cmath>
#include <cstdlib>

#include "cel/ast.h"
#include "core/strings.h"
#include "re2/re2.h"

namespace canhazgpu::cel {
namespace {

// "Quantity" -> "kubernetes.Quantity" and so on, so signatures stay short.
std::string ExpandAliases(std::string_view text) {
  static constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
      {"Quantity", "kubernetes.Quantity"},
      {"Semver", "kubernetes.Semver"},
      {"Duration", "google.protobuf.Duration"},
      {"Timestamp", "google.protobuf.Timestamp"},
  };
  std::string out(text);
  for (auto [alias, full] : kAliases) {
    size_t pos = 0;
    while ((pos = out.find(alias, pos)) != std::string::npos) {
      bool word_start = pos == 0 || out[pos - 1] == '(' || out[pos - 1] == ' ' ||
                        out[pos - 1] == ',' || out[pos - 1] == '<';
      if (word_start) {
        out.replace(pos, alias.size(), full);
        pos += full.size();
      } else {
        pos += alias.size();
      }
    }
  }
  return out;
}

Type MustParse(std::string_view text) {
  auto type = Type::Parse(text);
  if (!type.ok()) std::abort();  // a typo in a built-in signature
  return *type;
}

// Splits "a, map(b, c), d" at top-level commas.
std::vector<std::string> SplitTypes(std::string_view text) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (current.find_first_not_of(' ') != std::string::npos) parts.push_back(current);
  return parts;
}

// ---- operators ----

Value Equals(const Value* const* a, size_t, EvalContext& ctx) {
  StepBudget steps = ctx.Steps();
  std::optional<bool> eq = Equal((*a[0]), (*a[1]), &steps);
  if (!ctx.Charge(steps)) return CostLimitExceeded();
  if (!eq) return NoOverload("_==_");
  return Value::Bool(*eq);
}

Value NotEquals(const Value* const* a, size_t, EvalContext& ctx) {
  StepBudget steps = ctx.Steps();
  std::optional<bool> eq = Equal((*a[0]), (*a[1]), &steps);
  if (!ctx.Charge(steps)) return CostLimitExceeded();
  if (!eq) return NoOverload("_!=_");
  return Value::Bool(!*eq);
}

template <Relation kRelation>  // one of kLt, kLe, kGt, kGe
Value Ordered(const Value* const* a, size_t, EvalContext&) {
  Order o = Compare((*a[0]), (*a[1]));
  if (o == Order::kNoOverload) return NoOverload("relation");
  if (o == Order::kUnordered) return Value::Bool(false);
  switch (kRelation) {
    case Relation::kLt:
      return Value::Bool(o == Order::kLess);
    case Relation::kLe:
      return Value::Bool(o != Order::kGreater);
    case Relation::kGt:
      return Value::Bool(o == Order::kGreater);
    default:
      return Value::Bool(o != Order::kLess);
  }
}

Value Overflow() { return Value::Error("integer overflow"); }

Value MakeTimestamp(__int128 total_nanos) {
  __int128 seconds = total_nanos / kNanosPerSecond;
  __int128 nanos = total_nanos % kNanosPerSecond;
  if (nanos < 0) nanos += kNanosPerSecond, seconds -= 1;
  if (seconds < kMinTimestampSeconds || seconds > kMaxTimestampSeconds)
    return Value::Error("timestamp out of range");
  return Value::Timestamp(static_cast<int64_t>(seconds), static_cast<int32_t>(nanos));
}

__int128 TimestampNanos(const Value& t) {
  return static_cast<__int128>(t.timestamp_seconds()) * kNanosPerSecond + t.timestamp_nanos();
}

Value Add(const Value* const* a, size_t, EvalContext& ctx) {
  const Value &x = (*a[0]), &y = (*a[1]);
  switch (x.kind()) {
    case Kind::kInt: {
      int64_t r;
      if (__builtin_add_overflow(x.int_value(), y.int_value(), &r)) return Overflow();
      return Value::Int(r);
    }
    case Kind::kUint: {
      uint64_t r;
      if (__builtin_add_overflow(x.uint_value(), y.uint_value(), &r)) return Overflow();
      return Value::Uint(r);
    }
    case Kind::kDouble:
      return Value::Double(x.double_value() + y.double_value());
    case Kind::kString:
    case Kind::kBytes: {
      // The evaluator charged both operands' length (the new string's).
      std::string s = x.str() + y.str();
      return x.kind() == Kind::kString ? Value::String(std::move(s)) : Value::Bytes(std::move(s));
    }
    case Kind::kList: {
      // A unit per element: a list built by doubling stops near a million.
      if (!ctx.Charge(static_cast<int64_t>(x.list().size() + y.list().size())))
        return CostLimitExceeded();
      ValueList items = x.list();
      items.insert(items.end(), y.list().begin(), y.list().end());
      return Value::List(std::move(items));
    }
    case Kind::kDuration:
      if (y.kind() == Kind::kTimestamp)
        return MakeTimestamp(TimestampNanos(y) + x.duration_nanos());
      {
        int64_t r;
        if (__builtin_add_overflow(x.duration_nanos(), y.duration_nanos(), &r)) return Overflow();
        return Value::Duration(r);
      }
    case Kind::kTimestamp:
      return MakeTimestamp(TimestampNanos(x) + y.duration_nanos());
    default:
      return NoOverload("_+_");
  }
}

Value Subtract(const Value* const* a, size_t, EvalContext&) {
  const Value &x = (*a[0]), &y = (*a[1]);
  switch (x.kind()) {
    case Kind::kInt: {
      int64_t r;
      if (__builtin_sub_overflow(x.int_value(), y.int_value(), &r)) return Overflow();
      return Value::Int(r);
    }
    case Kind::kUint: {
      uint64_t r;
      if (__builtin_sub_overflow(x.uint_value(), y.uint_value(), &r)) return Overflow();
      return Value::Uint(r);
    }
    case Kind::kDouble:
      return Value::Double(x.double_value() - y.double_value());
    case Kind::kDuration: {
      int64_t r;
      if (__builtin_sub_overflow(x.duration_nanos(), y.duration_nanos(), &r)) return Overflow();
      return Value::Duration(r);
    }
    case Kind::kTimestamp:
      if (y.kind() == Kind::kDuration) return MakeTimestamp(TimestampNanos(x) - y.duration_nanos());
      {
        __int128 d = TimestampNanos(x) - TimestampNanos(y);
        if (d > INT64_MAX || d < INT64_MIN) return Overflow();
        return Value::Duration(static_cast<int64_t>(d));
      }
    default:
      return NoOverload("_-_");
  }
}

Value Multiply(const Value* const* a, size_t, EvalContext&) {
  const Value &x = (*a[0]), &y = (*a[1]);
  switch (x.kind()) {
    case Kind::kInt: {
      int64_t r;
      if (__builtin_mul_overflow(x.int_value(), y.int_value(), &r)) return Overflow();
      return Value::Int(r);
    }
    case Kind::kUint: {
      uint64_t r;
      if (__builtin_mul_overflow(x.uint_value(), y.uint_value(), &r)) return Overflow();
      return Value::Uint(r);
    }
    default:
      return Value::Double(x.double_value() * y.double_value());
  }
}

Value Divide(const Value* const* a, size_t, EvalContext&) {
  const Value &x = (*a[0]), &y = (*a[1]);
  switch (x.kind()) {
    case Kind::kInt:
      if (y.int_value() == 0) return Value::Error("division by zero");
      if (x.int_value() == INT64_MIN && y.int_value() == -1) return Overflow();
      return Value::Int(x.int_value() / y.int_value());
    case Kind::kUint:
      if (y.uint_value() == 0) return Value::Error("division by zero");
      return Value::Uint(x.uint_value() / y.uint_value());
    default:
      return Value::Double(x.double_value() / y.double_value());
  }
}

Value Modulo(const Value* const* a, size_t, EvalContext&) {
  const Value &x = (*a[0]), &y = (*a[1]);
  if (x.kind() == Kind::kInt) {
    if (y.int_value() == 0) return Value::Error("modulus by zero");
    if (y.int_value() == -1) return Value::Int(0);
    return Value::Int(x.int_value() % y.int_value());
  }
  if (y.uint_value() == 0) return Value::Error("modulus by zero");
  return Value::Uint(x.uint_value() % y.uint_value());
}

Value Negate(const Value* const* a, size_t, EvalContext&) {
  switch ((*a[0]).kind()) {
    case Kind::kInt:
      if ((*a[0]).int_value() == INT64_MIN) return Overflow();
      return Value::Int(-(*a[0]).int_value());
    case Kind::kDouble:
      return Value::Double(-(*a[0]).double_value());
    case Kind::kDuration:
      if ((*a[0]).duration_nanos() == INT64_MIN) return Overflow();
      return Value::Duration(-(*a[0]).duration_nanos());
    default:
      return NoOverload("-_");
  }
}

Value Not(const Value* const* a, size_t, EvalContext&) {
  return Value::Bool(!(*a[0]).bool_value());
}

Value IndexValue(const Value& container, const Value& index, bool* missing, EvalContext& ctx) {
  *missing = false;
  if (container.kind() == Kind::kList) {
    const ValueList& list = container.list();
    int64_t i;
    switch (index.kind()) {
      case Kind::kInt:
        i = index.int_value();
        break;
      case Kind::kUint:
        if (index.uint_value() > static_cast<uint64_t>(INT64_MAX))
          i = -1;
        else
          i = static_cast<int64_t>(index.uint_value());
        break;
      case Kind::kDouble: {
        double d = index.double_value();
        if (d != std::trunc(d) || std::isnan(d) || std::abs(d) > 9e18) {
          return Value::Error(StrCat("invalid list index: ", index.DebugString()));
        }
        i = static_cast<int64_t>(d);
        break;
      }
      default:
        return Value::Error(StrCat("invalid list index of type ", index.TypeName()));
    }
    if (i < 0 || i >= static_cast<int64_t>(list.size())) {
      *missing = true;
      return Value::Error(StrCat("index out of range: ", i));
    }
    return list[i];
  }
  if (container.kind() == Kind::kMap) {
    const MapData& map = container.map();
    StepBudget steps = ctx.Steps();
    const Value* v = map.Find(index, &steps);
    if (!ctx.Charge(steps)) return CostLimitExceeded();
    if (v != nullptr) return *v;
    *missing = true;
    if (map.missing_key_is_empty_map) return Value::Map(MapData{});
    if (index.kind() == Kind::kString) return Value::Error(StrCat("no such key: ", index.str()));
    return Value::Error(StrCat("no such key: ", index.DebugString()));
  }
  return NoOverload("_[_]");
}

Value OptionalIndex(const Value* const* a, size_t, EvalContext& ctx);

// Indexing an optional list or map is optional indexing (cel-go's
// optional_list_index_int, optional_map_index_value): `opt[k]` is `opt[?k]`.
Value Index(const Value* const* a, size_t n, EvalContext& ctx) {
  if ((*a[0]).kind() == Kind::kOptional) return OptionalIndex(a, n, ctx);
  bool missing;
  return IndexValue((*a[0]), (*a[1]), &missing, ctx);
}

Value OptionalIndex(const Value* const* a, size_t, EvalContext& ctx) {
  const Value* container = &(*a[0]);
  if (container->kind() == Kind::kOptional) {
    if (container->optional_value() == nullptr) return Value::OptionalNone();
    container = container->optional_value();
  }
  if (container->kind() != Kind::kList && container->kind() != Kind::kMap)
    return NoOverload("_[?_]");
  bool missing;
  Value v = IndexValue(*container, (*a[1]), &missing, ctx);
  if (missing) return Value::OptionalNone();
  if (v.is_error()) return v;
  return Value::OptionalOf(std::move(v));
}

Value In(const Value* const* a, size_t, EvalContext& ctx) {
  const Value &x = (*a[0]), &c = (*a[1]);
  StepBudget steps = ctx.Steps();
  if (c.kind() == Kind::kList) {
    bool found = false;
    for (const Value& item : c.list()) {
      found = Equal(x, item, &steps).value_or(false);
      if (found || steps.spent()) break;
    }
    if (!ctx.Charge(steps)) return CostLimitExceeded();
    return Value::Bool(found);
  }
  if (c.kind() == Kind::kMap) {
    const Value* v = c.map().Find(x, &steps);
    if (!ctx.Charge(steps)) return CostLimitExceeded();
    return Value::Bool(v != nullptr);
  }
  return NoOverload("@in");
}

Value Size(const Value* const* a, size_t, EvalContext&) {
  const Value& x = (*a[0]);
  switch (x.kind()) {
    case Kind::kString:
      return Value::Int(static_cast<int64_t>(CodePointCount(x.str())));
    case Kind::kBytes:
      return Value::Int(static_cast<int64_t>(x.str().size()));
    case Kind::kList:
      return Value::Int(static_cast<int64_t>(x.list().size()));
    case Kind::kMap:
      return Value::Int(static_cast<int64_t>(x.map().entries.size()));
    default:
      return NoOverload("size");
  }
}

Value Contains(const Value* const* a, size_t, EvalContext&) {
  return Value::Bool((*a[0]).str().find((*a[1]).str()) != std::string::npos);
}
Value StartsWith(const Value* const* a, size_t, EvalContext&) {
  return Value::Bool((*a[0]).str().compare(0, (*a[1]).str().size(), (*a[1]).str()) == 0 &&
                     (*a[0]).str().size() >= (*a[1]).str().size());
}
Value EndsWith(const Value* const* a, size_t, EvalContext&) {
  const std::string &s = (*a[0]).str(), &suffix = (*a[1]).str();
  return Value::Bool(s.size() >= suffix.size() &&
                     s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0);
}

Value Matches(const Value* const* a, size_t, EvalContext& ctx) {
  if (ctx.regex != nullptr) return Value::Bool(RE2::PartialMatch((*a[0]).str(), *ctx.regex));
  RE2 re((*a[1]).str(), RE2::Quiet);
  if (!re.ok())
    return Value::Error(StrCat("invalid regular expression '", (*a[1]).str(), "': ", re.error()));
  return Value::Bool(RE2::PartialMatch((*a[0]).str(), re));
}

}  // namespace

Value NoOverload(std::string_view function) {
  return Value::Error(StrCat("no matching overload for '", function, "'"));
}

Value CostLimitExceeded() { return Value::Error("actual cost limit exceeded"); }

void FunctionRegistry::Add(std::string_view raw_signature, FunctionImpl impl) {
  std::string signature = ExpandAliases(raw_signature);
  std::string_view sig = signature;
  size_t arrow = sig.rfind("->");
  std::string_view head = sig.substr(0, arrow);
  Type result = MustParse(sig.substr(arrow + 2));
  Overload overload{{}, result, impl};
  bool member = false;
  if (head[0] == '<') {
    size_t close = head.find(">.");
    overload.params.push_back(MustParse(head.substr(1, close - 1)));
    head = head.substr(close + 2);
    member = true;
  }
  size_t open = head.find('(');
  size_t close = head.rfind(')');
  std::string name(head.substr(0, open));
  for (const std::string& param : SplitTypes(head.substr(open + 1, close - open - 1))) {
    overload.params.push_back(MustParse(param));
  }
  size_t arity = overload.params.size();
  for (FunctionGroup& group : groups_) {
    if (group.name == name && group.member == member && group.arity == arity) {
      group.overloads.push_back(std::move(overload));
      return;
    }
  }
  FunctionGroup group{name, member, arity, {}, false};
  group.overloads.push_back(std::move(overload));
  groups_.push_back(std::move(group));
}

void FunctionRegistry::MarkLenient(std::string_view name) {
  for (FunctionGroup& group : groups_) {
    if (group.name == name) group.lenient = true;
  }
}

const FunctionGroup* FunctionRegistry::Find(std::string_view name, bool member,
                                            size_t arity) const {
  for (const FunctionGroup& group : groups_) {
    if (group.member == member && group.arity == arity && group.name == name) return &group;
  }
  return nullptr;
}

bool FunctionRegistry::HasName(std::string_view name) const {
  for (const FunctionGroup& group : groups_) {
    if (group.name == name) return true;
  }
  return false;
}

const FunctionRegistry& Functions() {
  static const FunctionRegistry* registry = [] {
    auto* r = new FunctionRegistry();
    RegisterStandard(*r);
    RegisterConversions(*r);
    RegisterStrings(*r);
    RegisterKubernetes(*r);
    RegisterOptionals(*r);
    RegisterTime(*r);
    return r;
  }();
  return *registry;
}

bool KindMatches(const Type& type, const Value& value) {
  switch (type.kind()) {
    case Type::Kind::kDyn:
    case Type::Kind::kAny:
    case Type::Kind::kParam:
      return true;
    case Type::Kind::kNull:
      return value.kind() == Kind::kNull;
    case Type::Kind::kBool:
      return value.kind() == Kind::kBool;
    case Type::Kind::kInt:
      return value.kind() == Kind::kInt;
    case Type::Kind::kUint:
      return value.kind() == Kind::kUint;
    case Type::Kind::kDouble:
      return value.kind() == Kind::kDouble;
    case Type::Kind::kString:
      return value.kind() == Kind::kString;
    case Type::Kind::kBytes:
      return value.kind() == Kind::kBytes;
    case Type::Kind::kList:
      return value.kind() == Kind::kList;
    case Type::Kind::kMap:
      return value.kind() == Kind::kMap;
    case Type::Kind::kType:
      return value.kind() == Kind::kType;
    case Type::Kind::kOptional:
      return value.kind() == Kind::kOptional;
    case Type::Kind::kDuration:
      return value.kind() == Kind::kDuration;
    case Type::Kind::kTimestamp:
      return value.kind() == Kind::kTimestamp;
    case Type::Kind::kQuantity:
      return value.kind() == Kind::kQuantity;
    case Type::Kind::kSemver:
      return value.kind() == Kind::kSemver;
    case Type::Kind::kObject:
      return false;
  }
  return false;
}

int MatchingOverload(const FunctionGroup& group, const Value* const* args, size_t count) {
  for (size_t k = 0; k < group.overloads.size(); ++k) {
    const Overload& overload = group.overloads[k];
    bool match = true;
    for (size_t i = 0; i < count && match; ++i) match = KindMatches(overload.params[i], *args[i]);
    if (match) return static_cast<int>(k);
  }
  return -1;
}

Value Dispatch(const FunctionGroup& group, const Value* const* args, size_t count,
               EvalContext& ctx) {
  int index = MatchingOverload(group, args, count);
  if (index >= 0) return group.overloads[static_cast<size_t>(index)].impl(args, count, ctx);
  if (group.lenient) return group.overloads[0].impl(args, count, ctx);
  std::string kinds;
  for (size_t i = 0; i < count; ++i) kinds += StrCat(i ? ", " : "", args[i]->TypeName());
  return Value::Error(
      StrCat("no matching overload for '", group.name, "' applied to (", kinds, ")"));
}

void RegisterStandard(FunctionRegistry& r) {
  r.Add("_==_(A, A) -> bool", Equals);
  r.Add("_!=_(A, A) -> bool", NotEquals);
  static constexpr std::string_view kOrdered[] = {"int",   "uint", "double",    "string",
                                                  "bytes", "bool", "Timestamp", "Duration"};
  static constexpr std::string_view kNumbers[] = {"int", "uint", "double"};
  struct Rel {
    std::string_view name;
    FunctionImpl impl;
  };
  const Rel relations[] = {{"_<_", Ordered<Relation::kLt>},
                           {"_<=_", Ordered<Relation::kLe>},
                           {"_>_", Ordered<Relation::kGt>},
                           {"_>=_", Ordered<Relation::kGe>}};
  for (const Rel& rel : relations) {
    for (std::string_view t : kOrdered)
      r.Add(StrCat(rel.name, "(", t, ", ", t, ") -> bool"), rel.impl);
    // Cross-type numeric comparisons (cel.CrossTypeNumericComparisons).
    for (std::string_view a : kNumbers) {
      for (std::string_view b : kNumbers) {
        if (a != b) r.Add(StrCat(rel.name, "(", a, ", ", b, ") -> bool"), rel.impl);
      }
    }
  }
  for (std::string_view t : {"int", "uint", "double", "string", "bytes"}) {
    r.Add(StrCat("_+_(", t, ", ", t, ") -> ", t), Add);
  }
  r.Add("_+_(list(A), list(A)) -> list(A)", Add);
  r.Add("_+_(Timestamp, Duration) -> Timestamp", Add);
  r.Add("_+_(Duration, Timestamp) -> Timestamp", Add);
  r.Add("_+_(Duration, Duration) -> Duration", Add);
  for (std::string_view t : kNumbers) {
    r.Add(StrCat("_-_(", t, ", ", t, ") -> ", t), Subtract);
    r.Add(StrCat("_*_(", t, ", ", t, ") -> ", t), Multiply);
    r.Add(StrCat("_/_(", t, ", ", t, ") -> ", t), Divide);
  }
  r.Add("_-_(Timestamp, Timestamp) -> Duration", Subtract);
  r.Add("_-_(Timestamp, Duration) -> Timestamp", Subtract);
  r.Add("_-_(Duration, Duration) -> Duration", Subtract);
  r.Add("_%_(int, int) -> int", Modulo);
  r.Add("_%_(uint, uint) -> uint", Modulo);
  r.Add("-_(int) -> int", Negate);
  r.Add("-_(double) -> double", Negate);
  r.Add("-_(Duration) -> Duration", Negate);
  r.Add("!_(bool) -> bool", Not);
  r.Add("_[_](list(A), int) -> A", Index);
  r.Add("_[_](map(K, V), K) -> V", Index);
  r.Add("_[_](optional_type(list(A)), int) -> optional_type(A)", Index);
  r.Add("_[_](optional_type(map(K, V)), K) -> optional_type(V)", Index);
  r.Add("_[?_](list(A), int) -> optional_type(A)", OptionalIndex);
  r.Add("_[?_](map(K, V), K) -> optional_type(V)", OptionalIndex);
  r.Add("_[?_](optional_type(list(A)), int) -> optional_type(A)", OptionalIndex);
  r.Add("_[?_](optional_type(map(K, V)), K) -> optional_type(V)", OptionalIndex);
  r.MarkLenient("_[_]");
  r.MarkLenient("_[?_]");
  r.Add("@in(A, list(A)) -> bool", In);
  r.Add("@in(K, map(K, V)) -> bool", In);
  for (std::string_view t : {"string", "bytes", "list(A)", "map(K, V)"}) {
    r.Add(StrCat("size(", t, ") -> int"), Size);
    r.Add(StrCat("<", t, ">.size() -> int"), Size);
  }
  r.Add("<string>.contains(string) -> bool", Contains);
  r.Add("<string>.startsWith(string) -> bool", StartsWith);
  r.Add("<string>.endsWith(string) -> bool", EndsWith);
  r.Add("matches(string, string) -> bool", Matches);
  r.Add("<string>.matches(string) -> bool", Matches);
}

std::u32string DecodeUtf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    int extra = c < 0x80 ? 0 : (c < 0xE0 ? 1 : (c < 0xF0 ? 2 : 3));
    char32_t cp = extra == 0 ? c : (c & (0x3F >> extra));
    for (int k = 1; k <= extra && i + k < s.size(); ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
    out.push_back(cp);
    i += extra + 1;
  }
  return out;
}

std::string EncodeUtf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  return out;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    int extra;
    uint32_t cp;
    if (c < 0x80)
      extra = 0, cp = c;
    else if ((c & 0xE0) == 0xC0)
      extra = 1, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
      extra = 2, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
      extra = 3, cp = c & 0x07;
    else
      return false;
    for (int k = 1; k <= extra; ++k) {
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += extra + 1;
  }
  return true;
}

size_t CodePointCount(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace canhazgpu::cel
