// Static types for the checker: CEL's primitive types, parameterized list,
// map, optional and type(T), type parameters for overload signatures, and
// the Kubernetes additions (Quantity, Semver, the DRA device object, and
// `Any` - the attribute type that acts like dyn except as a comprehension
// range).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu::cel {

class Type {
 public:
  enum class Kind : uint8_t {
    kDyn,
    kAny,
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
    kOptional,
    kDuration,
    kTimestamp,
    kQuantity,
    kSemver,
    kObject,  // a named object type with declared fields (kubernetes.DRADevice)
    kParam,   // a type parameter of an overload signature: A, B, K, V
  };

  Type() : kind_(Kind::kDyn) {}  // dyn

  static Type Dyn() { return Type(Kind::kDyn); }
  static Type Any() { return Type(Kind::kAny); }
  static Type Null() { return Type(Kind::kNull); }
  static Type Bool() { return Type(Kind::kBool); }
  static Type Int() { return Type(Kind::kInt); }
  static Type Uint() { return Type(Kind::kUint); }
  static Type Double() { return Type(Kind::kDouble); }
  static Type String() { return Type(Kind::kString); }
  static Type Bytes() { return Type(Kind::kBytes); }
  static Type Duration() { return Type(Kind::kDuration); }
  static Type Timestamp() { return Type(Kind::kTimestamp); }
  static Type Quantity() { return Type(Kind::kQuantity); }
  static Type Semver() { return Type(Kind::kSemver); }
  static Type List(Type elem);
  static Type Map(Type key, Type value);
  static Type TypeOf(Type t);
  static Type Optional(Type t);
  static Type Param(std::string name);
  static Type Object(std::string name);

  // "int", "list(string)", "map(string, dyn)", "optional_type(int)";
  // unknown names become objects.
  static absl::StatusOr<Type> Parse(std::string_view text);

  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }  // kParam, kObject
  const std::vector<Type>& params() const { return params_; }
  bool is_dynamic() const { return kind_ == Kind::kDyn || kind_ == Kind::kAny; }

  std::string ToString() const;
  bool operator==(const Type& other) const;
  bool operator!=(const Type& other) const { return !(*this == other); }

 private:
  explicit Type(Kind kind) : kind_(kind) {}

  Kind kind_;
  std::string name_;
  std::vector<Type> params_;
};

}  // namespace canhazgpu::cel
