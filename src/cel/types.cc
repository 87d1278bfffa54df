#include "cel/types.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "core/strings.h"

namespace canhazgpu::cel {
namespace {

// Types without parameters, by the name CEL gives them: one table for
// parsing names and for printing types.
struct SimpleType {
  std::string_view name;
  Type (*make)();
};
constexpr SimpleType kSimpleTypes[] = {
    {"dyn", &Type::Dyn},
    {"google.protobuf.Any", &Type::Any},
    {"null_type", &Type::Null},
    {"bool", &Type::Bool},
    {"int", &Type::Int},
    {"uint", &Type::Uint},
    {"double", &Type::Double},
    {"string", &Type::String},
    {"bytes", &Type::Bytes},
    {"google.protobuf.Duration", &Type::Duration},
    {"google.protobuf.Timestamp", &Type::Timestamp},
    {"kubernetes.Quantity", &Type::Quantity},
    {"kubernetes.Semver", &Type::Semver},
};

struct TypeParser {
  std::string_view text;
  size_t pos = 0;

  void SkipSpace() {
    while (pos < text.size() && text[pos] == ' ') ++pos;
  }

  absl::StatusOr<Type> ParseType() {
    SkipSpace();
    size_t start = pos;
    while (pos < text.size() &&
           (absl::ascii_isalnum(text[pos]) || text[pos] == '_' || text[pos] == '.')) {
      ++pos;
    }
    std::string_view name = text.substr(start, pos - start);
    if (name.empty()) return absl::InvalidArgumentError(StrCat("bad type: ", text));
    std::vector<Type> params;
    SkipSpace();
    if (pos < text.size() && text[pos] == '(') {
      ++pos;
      while (true) {
        auto param = ParseType();
        if (!param.ok()) return param.status();
        params.push_back(*std::move(param));
        SkipSpace();
        if (pos < text.size() && text[pos] == ',') {
          ++pos;
          continue;
        }
        if (pos < text.size() && text[pos] == ')') {
          ++pos;
          break;
        }
        return absl::InvalidArgumentError(StrCat("bad type: ", text));
      }
    }
    auto arity = [&](size_t n) -> absl::Status {
      if (params.size() != n) return absl::InvalidArgumentError(StrCat("bad type: ", text));
      return absl::OkStatus();
    };
    for (const SimpleType& simple : kSimpleTypes) {
      if (name == simple.name) {
        if (auto s = arity(0); !s.ok()) return s;
        return simple.make();
      }
    }
    if (name == "list") {
      if (params.empty()) return Type::List(Type::Dyn());
      if (auto s = arity(1); !s.ok()) return s;
      return Type::List(params[0]);
    }
    if (name == "map") {
      if (params.empty()) return Type::Map(Type::Dyn(), Type::Dyn());
      if (auto s = arity(2); !s.ok()) return s;
      return Type::Map(params[0], params[1]);
    }
    if (name == "type") {
      if (params.empty()) return Type::TypeOf(Type::Dyn());
      if (auto s = arity(1); !s.ok()) return s;
      return Type::TypeOf(params[0]);
    }
    if (name == "optional_type") {
      if (auto s = arity(1); !s.ok()) return s;
      return Type::Optional(params[0]);
    }
    if (name.size() == 1 && absl::ascii_isupper(name[0])) return Type::Param(std::string(name));
    return Type::Object(std::string(name));
  }
};

}  // namespace

Type Type::List(Type elem) {
  Type t(Kind::kList);
  t.params_.push_back(std::move(elem));
  return t;
}
Type Type::Map(Type key, Type value) {
  Type t(Kind::kMap);
  t.params_.push_back(std::move(key));
  t.params_.push_back(std::move(value));
  return t;
}
Type Type::TypeOf(Type of) {
  Type t(Kind::kType);
  t.params_.push_back(std::move(of));
  return t;
}
Type Type::Optional(Type of) {
  Type t(Kind::kOptional);
  t.params_.push_back(std::move(of));
  return t;
}
Type Type::Param(std::string name) {
  Type t(Kind::kParam);
  t.name_ = std::move(name);
  return t;
}
Type Type::Object(std::string name) {
  Type t(Kind::kObject);
  t.name_ = std::move(name);
  return t;
}

absl::StatusOr<Type> Type::Parse(std::string_view text) {
  TypeParser parser{text};
  auto type = parser.ParseType();
  if (!type.ok()) return type;
  parser.SkipSpace();
  if (parser.pos != text.size()) return absl::InvalidArgumentError(StrCat("bad type: ", text));
  return type;
}

std::string Type::ToString() const {
  if (params_.empty() && name_.empty()) {
    for (const SimpleType& simple : kSimpleTypes) {
      if (simple.make().kind_ == kind_) return std::string(simple.name);
    }
  }
  switch (kind_) {
    case Kind::kObject:
    case Kind::kParam:
      return name_;
    case Kind::kList:
      return StrCat("list(", params_[0].ToString(), ")");
    case Kind::kMap:
      return StrCat("map(", params_[0].ToString(), ", ", params_[1].ToString(), ")");
    case Kind::kType:
      return StrCat("type(", params_[0].ToString(), ")");
    case Kind::kOptional:
      return StrCat("optional_type(", params_[0].ToString(), ")");
    default:  // the simple types, named above
      break;
  }
  return "?";
}

bool Type::operator==(const Type& other) const {
  return kind_ == other.kind_ && name_ == other.name_ && params_ == other.params_;
}

}  // namespace canhazgpu::cel
