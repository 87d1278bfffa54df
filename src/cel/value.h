// CEL runtime values. A Value is 32 bytes: a kind, a scalar and a shared,
// immutable heap part for strings, lists, maps and the rest, so copying one
// is cheap and evaluation never mutates what a compiled program holds.
// Errors are values too (CEL absorbs some of them in && and ||).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cel/semver.h"
#include "core/quantity.h"

namespace canhazgpu::cel {

enum class Kind : uint8_t {
  kNull,
  kBool,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kList,
  kMap,
  kType,
  kDuration,   // nanoseconds in the scalar
  kTimestamp,  // seconds in the scalar, nanoseconds in aux
  kOptional,
  kQuantity,
  kSemver,
  kError,
};

class Value;
using ValueList = std::vector<Value>;
struct MapData;

struct ErrorData {
  std::string message;
  int32_t offset;  // byte offset in the source, -1 when unknown
};

class Value {
 public:
  Value() : kind_(Kind::kNull) { scalar_.i = 0; }

  static Value Null() { return Value(); }
  // Scalars are built inline and in whole-word stores: the evaluator makes
  // one per comparison, and a value written in narrower pieces (or out of
  // line) makes whoever copies it next wait for the stores to drain.
  static Value Bool(bool b) {
    Value v(Kind::kBool);
    v.scalar_.i = b;  // the whole word in one store
    return v;
  }
  static Value Int(int64_t i) {
    Value v(Kind::kInt);
    v.scalar_.i = i;
    return v;
  }
  static Value Uint(uint64_t u) {
    Value v(Kind::kUint);
    v.scalar_.u = u;
    return v;
  }
  static Value Double(double d) {
    Value v(Kind::kDouble);
    v.scalar_.d = d;
    return v;
  }
  static Value String(std::string s);
  // A string for a key that many maps share ("attributes", an attribute
  // name). Its text is kept once per process, so the evaluator recognises
  // the key by address (identity() == InternedKey(text)) without reading it.
  static Value Key(std::string_view key);
  // The address of the pooled copy of `key` (added if the pool has room),
  // nullptr when there is none. The pool never frees a key.
  static const void* InternedKey(std::string_view key);
  static Value Bytes(std::string s);
  static Value List(ValueList items);
  static Value Map(MapData map);
  static Value Type(std::string_view name);
  static Value Duration(int64_t nanos);
  static Value Timestamp(int64_t seconds, int32_t nanos);
  static Value OptionalOf(Value v);
  static Value OptionalNone();
  static Value FromQuantity(Quantity q);
  static Value FromSemver(Semver s);
  static Value Error(std::string message, int32_t offset = -1);

  Kind kind() const { return kind_; }
  bool is_error() const { return kind_ == Kind::kError; }
  bool is_bool(bool b) const { return kind_ == Kind::kBool && (scalar_.i != 0) == b; }

  bool bool_value() const { return scalar_.i != 0; }
  int64_t int_value() const { return scalar_.i; }
  uint64_t uint_value() const { return scalar_.u; }
  double double_value() const { return scalar_.d; }
  int64_t duration_nanos() const { return scalar_.i; }
  int64_t timestamp_seconds() const { return scalar_.i; }
  int32_t timestamp_nanos() const { return aux_; }
  // String, bytes and type name.
  const std::string& str() const { return *static_cast<const std::string*>(heap_.get()); }
  const ValueList& list() const { return *static_cast<const ValueList*>(heap_.get()); }
  const MapData& map() const { return *static_cast<const MapData*>(heap_.get()); }
  const Quantity& quantity() const { return *static_cast<const Quantity*>(heap_.get()); }
  const Semver& semver() const { return *static_cast<const Semver*>(heap_.get()); }
  const ErrorData& error() const { return *static_cast<const ErrorData*>(heap_.get()); }
  // Optional: nullptr when empty.
  const Value* optional_value() const { return static_cast<const Value*>(heap_.get()); }

  // The address of the shared heap part (nullptr for scalars): the same
  // address means the same immutable value.
  const void* identity() const { return heap_.get(); }

  // The CEL type name: "int", "list", "google.protobuf.Duration", ...
  std::string_view TypeName() const;
  // A CEL-like rendering for messages and the conformance runner.
  std::string DebugString() const;

 private:
  explicit Value(Kind kind) : kind_(kind) { scalar_.i = 0; }
  // A value whose data lives in the shared, immutable heap part.
  template <typename T>
  static Value OnHeap(Kind kind, T data) {
    Value v(kind);
    v.heap_ = std::make_shared<const T>(std::move(data));
    return v;
  }

  Kind kind_;
  int32_t aux_ = 0;
  union {
    int64_t i;  // also bool, 0 or 1
    uint64_t u;
    double d;
  } scalar_;
  std::shared_ptr<const void> heap_;
};

// How many elements, entries and keys a deep comparison or a map lookup may
// still look at. Values are immutable and shared, so a cheap expression can
// build one whose comparison is not (a list of a thousand references to a
// list of a thousand): these take a budget, stop once it is spent, and the
// functions charge what was used to the cost limit (EvalContext::Steps).
class StepBudget {
 public:
  static constexpr int64_t kUnlimited = INT64_MAX;
  explicit StepBudget(int64_t steps = kUnlimited) : start_(steps), left_(steps) {}

  // Takes one step; false once the budget is spent.
  bool Take() { return --left_ >= 0; }
  bool spent() const { return left_ < 0; }
  int64_t used() const { return start_ - left_; }

 private:
  int64_t start_;
  int64_t left_;
};

struct MapData {
  std::vector<std::pair<Value, Value>> entries;
  // Kubernetes wraps device.attributes and device.capacity so that a domain
  // that is not there reads as an empty map (dynamic-resource-allocation
  // cel/compile.go); `in`, size() and iteration still see real keys only.
  bool missing_key_is_empty_map = false;

  // Key lookup with CEL's numeric cross-type rule (1 finds 1u and 1.0).
  // Each entry looked at takes a step of `steps` (none when null); nullptr
  // also once they are spent.
  const Value* Find(const Value& key, StepBudget* steps = nullptr) const;
  const Value* FindString(std::string_view key, StepBudget* steps = nullptr) const;
  // The same, trying entry `*hint` first and leaving where it found the key
  // there (evaluator.cc keeps one hint per expression node).
  const Value* FindString(std::string_view key, int32_t* hint, StepBudget* steps = nullptr) const;
};

// Heterogeneous equality: nullopt where CEL has no overload (a Quantity or
// Semver compared with another type). Each value compared takes a step of
// `steps` (none when null); false once they are spent.
std::optional<bool> Equal(const Value& a, const Value& b, StepBudget* steps = nullptr);
// Ordering of two values: -1/0/1, nullopt when not ordered (no overload or
// a NaN).
enum class Order { kLess, kEqual, kGreater, kUnordered, kNoOverload };
Order Compare(const Value& a, const Value& b);

// Whether a map key of this kind is allowed (int, uint, bool, string).
bool IsValidMapKey(const Value& key);

}  // namespace canhazgpu::cel
