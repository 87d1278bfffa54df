// Label and field selectors as the API server parses them
// (k8s.io/apimachinery pkg/labels and pkg/fields). Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

// `a=b,c!=d,e in (x,y),f notin (z),g,!h,n>3`: every requirement must hold.
class LabelSelector {
 public:
  // InvalidArgument naming the bad part, as the server's 400 does.
  static absl::StatusOr<LabelSelector> Parse(const std::string& text);
  bool Matches(const nlohmann::json& labels) const;  // an object of strings, or null
  bool empty() const { return requirements_.empty(); }

 private:
  enum class Op { kExists, kNotExists, kEquals, kNotEquals, kIn, kNotIn, kGreater, kLess };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

// `metadata.name=x,spec.nodeName!=y`. Fields are paths into the object.
class FieldSelector {
 public:
  static absl::StatusOr<FieldSelector> Parse(const std::string& text);
  bool Matches(const nlohmann::json& object) const;
  // The fields it names, for the server to check against what a kind supports.
  std::vector<std::string> Fields() const;
  bool empty() const { return terms_.empty(); }

 private:
  struct Term {
    std::string field;
    bool equals;
    std::string value;
  };
  std::vector<Term> terms_;
};

// The value at dotted `path` in `object` as a field selector compares it:
// strings as they are, booleans and numbers as text, missing as "".
std::string FieldValue(const nlohmann::json& object, const std::string& path);

}  // namespace canhazgpu::kubesim
