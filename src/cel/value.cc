#include "cel/value.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "core/mutex.h"
#include "core/strings.h"

namespace canhazgpu::cel {
namespace {

bool IsNumber(Kind k) { return k == Kind::kInt || k == Kind::kUint || k == Kind::kDouble; }

// Exact ordering of two numbers of any of the three kinds.
Order CompareNumbers(const Value& a, const Value& b) {
  auto three_way = [](auto x, auto y) {
    return x < y ? Order::kLess : (x > y ? Order::kGreater : Order::kEqual);
  };
  Kind ka = a.kind(), kb = b.kind();
  if (ka == Kind::kDouble || kb == Kind::kDouble) {
    if (ka == Kind::kDouble && kb == Kind::kDouble) {
      if (std::isnan(a.double_value()) || std::isnan(b.double_value())) return Order::kUnordered;
      return three_way(a.double_value(), b.double_value());
    }
    // One side integral: compared as doubles, as cel-go does
    // (9223372036854775807 equals 9223372036854775808.0).
    bool flip = ka != Kind::kDouble;
    const Value& d = flip ? b : a;
    const Value& n = flip ? a : b;
    double x = d.double_value();
    if (std::isnan(x)) return Order::kUnordered;
    double y = n.kind() == Kind::kInt ? static_cast<double>(n.int_value())
                                      : static_cast<double>(n.uint_value());
    Order o = three_way(x, y);
    if (flip) o = o == Order::kLess ? Order::kGreater : (o == Order::kGreater ? Order::kLess : o);
    return o;
  }
  if (ka == kb) {
    return ka == Kind::kInt ? three_way(a.int_value(), b.int_value())
                            : three_way(a.uint_value(), b.uint_value());
  }
  if (ka == Kind::kInt) {
    if (a.int_value() < 0) return Order::kLess;
    return three_way(static_cast<uint64_t>(a.int_value()), b.uint_value());
  }
  if (b.int_value() < 0) return Order::kGreater;
  return three_way(a.uint_value(), static_cast<uint64_t>(b.int_value()));
}

std::string FormatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  return StrCat(d);
}

}  // namespace

Value Value::String(std::string s) { return OnHeap(Kind::kString, std::move(s)); }

namespace {

// Map keys shared by every device map: kept once per process, never freed,
// so an address seen in the pool always holds the same text. Bounded, so
// that names read from untrusted input cannot grow it without end.
class KeyPool {
 public:
  static KeyPool& Get() {
    static KeyPool* pool = new KeyPool;  // never destroyed: keys outlive static teardown
    return *pool;
  }

  // The pool's copy of `key`, added if there is room; nullptr when full.
  std::shared_ptr<const void> Intern(std::string_view key) {
    MutexLock lock(mu_);
    auto it = keys_.find(absl::string_view(key.data(), key.size()));
    if (it != keys_.end()) return it->second;
    if (keys_.size() >= kMaxKeys) return nullptr;
    auto text = std::make_shared<const std::string>(key);
    keys_.emplace(*text, text);
    return text;
  }

 private:
  static constexpr size_t kMaxKeys = 4096;
  Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const std::string>> keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

Value Value::Key(std::string_view key) {
  std::shared_ptr<const void> interned = KeyPool::Get().Intern(key);
  if (interned == nullptr) return String(std::string(key));
  Value v(Kind::kString);
  v.heap_ = std::move(interned);
  return v;
}

const void* Value::InternedKey(std::string_view key) { return KeyPool::Get().Intern(key).get(); }
Value Value::Bytes(std::string s) { return OnHeap(Kind::kBytes, std::move(s)); }
Value Value::List(ValueList items) { return OnHeap(Kind::kList, std::move(items)); }
Value Value::Map(MapData map) { return OnHeap(Kind::kMap, std::move(map)); }
Value Value::Type(std::string_view name) { return OnHeap(Kind::kType, std::string(name)); }
Value Value::Duration(int64_t nanos) {
  Value v(Kind::kDuration);
  v.scalar_.i = nanos;
  return v;
}
Value Value::Timestamp(int64_t seconds, int32_t nanos) {
  Value v(Kind::kTimestamp);
  v.scalar_.i = seconds;
  v.aux_ = nanos;
  return v;
}
Value Value::OptionalOf(Value inner) { return OnHeap(Kind::kOptional, std::move(inner)); }
Value Value::OptionalNone() { return Value(Kind::kOptional); }
Value Value::FromQuantity(Quantity q) { return OnHeap(Kind::kQuantity, q); }
Value Value::FromSemver(Semver s) { return OnHeap(Kind::kSemver, std::move(s)); }
Value Value::Error(std::string message, int32_t offset) {
  return OnHeap(Kind::kError, ErrorData{std::move(message), offset});
}

std::string_view Value::TypeName() const {
  switch (kind_) {
    case Kind::kNull:
      return "null_type";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kUint:
      return "uint";
    case Kind::kDouble:
      return "double";
    case Kind::kString:
      return "string";
    case Kind::kBytes:
      return "bytes";
    case Kind::kList:
      return "list";
    case Kind::kMap:
      return "map";
    case Kind::kType:
      return "type";
    case Kind::kDuration:
      return "google.protobuf.Duration";
    case Kind::kTimestamp:
      return "google.protobuf.Timestamp";
    case Kind::kOptional:
      return "optional_type";
    case Kind::kQuantity:
      return "kubernetes.Quantity";
    case Kind::kSemver:
      return "kubernetes.Semver";
    case Kind::kError:
      return "error";
  }
  return "unknown";
}

std::string Value::DebugString() const {
  switch (kind_) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return bool_value() ? "true" : "false";
    case Kind::kInt:
      return StrCat(scalar_.i);
    case Kind::kUint:
      return StrCat(scalar_.u, "u");
    case Kind::kDouble:
      return FormatDouble(scalar_.d);
    case Kind::kString:
      return StrCat("\"", absl::CHexEscape(str()), "\"");
    case Kind::kBytes:
      return StrCat("b\"", absl::CHexEscape(str()), "\"");
    case Kind::kType:
      return str();
    case Kind::kList: {
      std::vector<std::string> parts;
      for (const Value& v : list()) parts.push_back(v.DebugString());
      return StrCat("[", Join(parts, ", "), "]");
    }
    case Kind::kMap: {
      std::vector<std::string> parts;
      for (const auto& [k, v] : map().entries) {
        parts.push_back(StrCat(k.DebugString(), ": ", v.DebugString()));
      }
      return StrCat("{", Join(parts, ", "), "}");
    }
    case Kind::kDuration:
      return StrCat("duration(\"", scalar_.i, "ns\")");
    case Kind::kTimestamp:
      return StrCat("timestamp(", scalar_.i, ".", aux_, ")");
    case Kind::kOptional:
      return optional_value() ? StrCat("optional.of(", optional_value()->DebugString(), ")")
                              : "optional.none()";
    case Kind::kQuantity:
      return StrCat("quantity(\"", quantity().ToString(), "\")");
    case Kind::kSemver:
      return StrCat("semver(\"", semver().ToString(), "\")");
    case Kind::kError:
      return StrCat("error(", error().message, ")");
  }
  return "?";
}

const Value* MapData::Find(const Value& key, StepBudget* steps) const {
  if (key.kind() == Kind::kString) return FindString(key.str(), steps);
  StepBudget unlimited;
  if (steps == nullptr) steps = &unlimited;
  for (const auto& entry : entries) {
    if (!steps->Take()) return nullptr;
    const Value& k = entry.first;
    if (k.kind() == key.kind() || (IsNumber(k.kind()) && IsNumber(key.kind()))) {
      if (Equal(k, key).value_or(false)) return &entry.second;
    }
  }
  return nullptr;
}

const Value* MapData::FindString(std::string_view key, StepBudget* steps) const {
  int32_t hint = -1;
  return FindString(key, &hint, steps);
}

const Value* MapData::FindString(std::string_view key, int32_t* hint, StepBudget* steps) const {
  auto matches = [&](const std::pair<Value, Value>& entry) {
    return entry.first.kind() == Kind::kString && entry.first.str() == key;
  };
  if (*hint >= 0 && static_cast<size_t>(*hint) < entries.size() &&
      matches(entries[static_cast<size_t>(*hint)])) {
    return &entries[static_cast<size_t>(*hint)].second;
  }
  StepBudget unlimited;
  if (steps == nullptr) steps = &unlimited;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!steps->Take()) return nullptr;
    if (matches(entries[i])) {
      *hint = static_cast<int32_t>(i);
      return &entries[i].second;
    }
  }
  return nullptr;
}

bool IsValidMapKey(const Value& key) {
  Kind k = key.kind();
  return k == Kind::kInt || k == Kind::kUint || k == Kind::kBool || k == Kind::kString;
}

std::optional<bool> Equal(const Value& a, const Value& b, StepBudget* steps) {
  if (steps != nullptr && !steps->Take()) return false;
  Kind ka = a.kind(), kb = b.kind();
  if (IsNumber(ka) && IsNumber(kb)) return CompareNumbers(a, b) == Order::kEqual;
  if (ka == Kind::kQuantity || ka == Kind::kSemver) {
    if (ka != kb) return std::nullopt;
    return ka == Kind::kQuantity ? a.quantity().Compare(b.quantity()) == 0
                                 : a.semver().Compare(b.semver()) == 0;
  }
  if (ka != kb) return false;
  switch (ka) {
    case Kind::kNull:
      return true;
    case Kind::kBool:
      return a.bool_value() == b.bool_value();
    case Kind::kString:
    case Kind::kBytes:
    case Kind::kType:
      return a.str() == b.str();
    case Kind::kDuration:
      return a.duration_nanos() == b.duration_nanos();
    case Kind::kTimestamp:
      return a.timestamp_seconds() == b.timestamp_seconds() &&
             a.timestamp_nanos() == b.timestamp_nanos();
    case Kind::kList: {
      const ValueList &x = a.list(), &y = b.list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        std::optional<bool> eq = Equal(x[i], y[i], steps);
        if (!eq.has_value()) return std::nullopt;
        if (!*eq) return false;
      }
      return true;
    }
    case Kind::kMap: {
      const MapData &x = a.map(), &y = b.map();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.Find(k, steps);
        if (other == nullptr) return false;
        std::optional<bool> eq = Equal(v, *other, steps);
        if (!eq.has_value()) return std::nullopt;
        if (!*eq) return false;
      }
      return true;
    }
    case Kind::kOptional: {
      const Value *x = a.optional_value(), *y = b.optional_value();
      if (x == nullptr || y == nullptr) return x == y;
      return Equal(*x, *y, steps);
    }
    default:
      return false;
  }
}

Order Compare(const Value& a, const Value& b) {
  Kind ka = a.kind(), kb = b.kind();
  if (IsNumber(ka) && IsNumber(kb)) return CompareNumbers(a, b);
  if (ka != kb) return Order::kNoOverload;
  auto three_way = [](auto x, auto y) {
    return x < y ? Order::kLess : (x > y ? Order::kGreater : Order::kEqual);
  };
  switch (ka) {
    case Kind::kBool:
      return three_way(a.bool_value(), b.bool_value());
    case Kind::kString:
    case Kind::kBytes: {
      int c = a.str().compare(b.str());  // UTF-8 byte order is code-point order
      return c < 0 ? Order::kLess : (c > 0 ? Order::kGreater : Order::kEqual);
    }
    case Kind::kDuration:
      return three_way(a.duration_nanos(), b.duration_nanos());
    case Kind::kTimestamp: {
      Order o = three_way(a.timestamp_seconds(), b.timestamp_seconds());
      return o != Order::kEqual ? o : three_way(a.timestamp_nanos(), b.timestamp_nanos());
    }
    default:
      return Order::kNoOverload;
  }
}

}  // namespace canhazgpu::cel
