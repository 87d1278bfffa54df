// Name resolution and type checking (the compile stage between parsing and
// evaluation). Follows cel-go's checker where Kubernetes relies on it:
// overloads chosen by unifying argument types with signatures, `dyn` (and
// the DRA attribute type) assignable to anything, heterogeneous literals
// typed as dyn (or rejected with HomogeneousAggregateLiterals), and
// comprehension ranges limited to list, map and dyn.
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "cel/program.h"
#include "core/strings.h"
#include "re2/re2.h"

namespace canhazgpu::cel::internal {
namespace {

using Bindings = absl::flat_hash_map<std::string, Type>;

const Type* BoundOrNull(const Bindings& b, const std::string& name) {
  auto it = b.find(name);
  return it == b.end() ? nullptr : &it->second;
}

// Whether two concrete types agree, with dyn matching anything.
bool Compatible(const Type& a, const Type& b) {
  if (a.is_dynamic() || b.is_dynamic()) return true;
  if (a.kind() == Type::Kind::kType && b.kind() == Type::Kind::kType)
    return true;  // type values compare freely
  if (a.kind() == Type::Kind::kParam || b.kind() == Type::Kind::kParam) return true;
  if (a.kind() != b.kind()) return false;
  if (a.kind() == Type::Kind::kObject) return a.name() == b.name();
  for (size_t i = 0; i < a.params().size(); ++i) {
    if (!Compatible(a.params()[i], b.params()[i])) return false;
  }
  return true;
}

// Whether an argument of type `arg` can be passed where `param` is declared,
// binding type parameters.
bool Assignable(const Type& param, const Type& arg, Bindings& b) {
  if (param.kind() == Type::Kind::kParam) {
    if (const Type* bound = BoundOrNull(b, param.name())) {
      if (bound->is_dynamic() && !arg.is_dynamic()) {
        b[param.name()] = arg;
        return true;
      }
      return Compatible(*bound, arg);
    }
    b[param.name()] = arg;
    return true;
  }
  if (param.is_dynamic() || arg.is_dynamic()) return true;
  if (param.kind() != arg.kind()) return false;
  if (param.kind() == Type::Kind::kType) return true;
  if (param.kind() == Type::Kind::kObject) return param.name() == arg.name();
  for (size_t i = 0; i < param.params().size(); ++i) {
    if (!Assignable(param.params()[i], arg.params()[i], b)) return false;
  }
  return true;
}

Type Substitute(const Type& t, const Bindings& b) {
  switch (t.kind()) {
    case Type::Kind::kParam: {
      const Type* bound = BoundOrNull(b, t.name());
      return bound ? *bound : Type::Dyn();
    }
    case Type::Kind::kList:
      return Type::List(Substitute(t.params()[0], b));
    case Type::Kind::kMap:
      return Type::Map(Substitute(t.params()[0], b), Substitute(t.params()[1], b));
    case Type::Kind::kType:
      return Type::TypeOf(Substitute(t.params()[0], b));
    case Type::Kind::kOptional:
      return Type::Optional(Substitute(t.params()[0], b));
    default:
      return t;
  }
}

Type TypeOfConstant(const Value& v) {
  switch (v.kind()) {
    case Kind::kNull:
      return Type::Null();
    case Kind::kBool:
      return Type::Bool();
    case Kind::kInt:
      return Type::Int();
    case Kind::kUint:
      return Type::Uint();
    case Kind::kDouble:
      return Type::Double();
    case Kind::kString:
      return Type::String();
    case Kind::kBytes:
      return Type::Bytes();
    case Kind::kDuration:
      return Type::Duration();
    case Kind::kTimestamp:
      return Type::Timestamp();
    case Kind::kQuantity:
      return Type::Quantity();
    case Kind::kSemver:
      return Type::Semver();
    case Kind::kType: {
      auto t = Type::Parse(v.str());
      return Type::TypeOf(t.ok() ? *t : Type::Dyn());
    }
    default:
      return Type::Dyn();
  }
}

bool IsTypeName(std::string_view name) {
  static constexpr std::string_view kNames[] = {"int",
                                                "uint",
                                                "double",
                                                "bool",
                                                "string",
                                                "bytes",
                                                "list",
                                                "map",
                                                "null_type",
                                                "type",
                                                "google.protobuf.Duration",
                                                "google.protobuf.Timestamp",
                                                "optional_type"};
  for (std::string_view n : kNames) {
    if (n == name) return true;
  }
  return false;
}

class Checker {
 public:
  Checker(const Env& env, std::string* error, int32_t* error_offset)
      : env_(env), check_(env.options().type_check), error_(error), error_offset_(error_offset) {}

  bool Visit(ExprPtr& holder) {
    Expr& e = *holder;
    switch (e.kind) {
      case ExprKind::kConst:
        e.type = TypeOfConstant(e.value);
        return true;
      case ExprKind::kIdent:
        return VisitIdent(holder);
      case ExprKind::kSelect:
        return VisitSelect(holder);
      case ExprKind::kCall:
        return VisitCall(e);
      case ExprKind::kList:
        return VisitList(e);
      case ExprKind::kMap:
        return VisitMap(e);
      case ExprKind::kComprehension:
        return VisitComprehension(e);
    }
    return true;
  }

  int max_locals() const { return max_locals_; }

 private:
  struct Local {
    std::string name;
    Type type = Type::Dyn();
  };

  bool Fail(int32_t offset, std::string message) {
    *error_ = std::move(message);
    *error_offset_ = offset;
    return false;
  }

  const Local* FindLocal(std::string_view name, int* slot) const {
    for (int i = static_cast<int>(locals_.size()) - 1; i >= 0; --i) {
      if (locals_[i].name == name) {
        *slot = i;
        return &locals_[i];
      }
    }
    return nullptr;
  }

  void PushLocal(std::string name, Type type) {
    locals_.push_back({std::move(name), std::move(type)});
    max_locals_ = std::max(max_locals_, static_cast<int>(locals_.size()));
  }

  // Names to try for `name` in the container, most qualified first.
  std::vector<std::string> Candidates(const std::string& name, bool root) const {
    std::vector<std::string> out;
    if (!root && !env_.options().container.empty()) {
      std::vector<std::string_view> parts = Split(env_.options().container, '.');
      for (size_t n = parts.size(); n > 0; --n) {
        std::vector<std::string> prefix(parts.begin(), parts.begin() + n);
        out.push_back(StrCat(Join(prefix, "."), ".", name));
      }
    }
    out.push_back(name);
    return out;
  }

  // Turns the node into a reference to a declared variable or a type name.
  bool ResolveName(Expr& e, const std::string& name, bool root) {
    for (const std::string& candidate : Candidates(name, root)) {
      int slot = env_.Find(candidate);
      if (slot >= 0) {
        e.kind = ExprKind::kIdent;
        e.name = candidate;
        e.variable = slot;
        e.type = env_.declarations()[slot].second;
        e.target.reset();
        return true;
      }
    }
    if (IsTypeName(name)) {
      e.kind = ExprKind::kConst;
      e.value = Value::Type(name);
      e.type = TypeOfConstant(e.value);
      e.target.reset();
      return true;
    }
    return false;
  }

  // The dotted name of a chain of plain selects over an identifier that is
  // not a comprehension variable ("a.b.c"), or nullopt.
  std::optional<std::string> QualifiedName(const Expr& e, bool* root) const {
    if (e.kind == ExprKind::kIdent) {
      int slot;
      if (e.variable >= 0 || FindLocal(e.name, &slot) != nullptr) return std::nullopt;
      *root = e.root;
      return e.name;
    }
    if (e.kind == ExprKind::kSelect && !e.test_only && !e.optional) {
      auto prefix = QualifiedName(*e.target, root);
      if (prefix) return StrCat(*prefix, ".", e.name);
    }
    return std::nullopt;
  }

  bool VisitIdent(ExprPtr& holder) {
    Expr& e = *holder;
    if (e.variable >= 0) return true;
    int slot;
    if (!e.root) {
      if (const Local* local = FindLocal(e.name, &slot)) {
        e.variable = -2 - slot;
        e.type = local->type;
        return true;
      }
    }
    if (ResolveName(e, e.name, e.root)) return true;
    e.variable = -1;
    e.type = Type::Dyn();
    if (check_) return Fail(e.offset, StrCat("undeclared reference to '", e.name, "'"));
    return true;  // an error when evaluated, which || and && may absorb
  }

  bool VisitSelect(ExprPtr& holder) {
    Expr& e = *holder;
    bool root = false;
    if (!e.test_only && !e.optional) {
      if (auto name = QualifiedName(e, &root); name && ResolveName(e, *name, root)) return true;
    }
    if (!Visit(e.target)) return false;
    const Type& operand = e.target->type;
    if (!check_) return true;
    Type field = Type::Dyn();
    const Type* base = &operand;
    bool through_optional = false;
    // Selecting on an optional selects on its value, giving an optional
    // (has() tests the value: false when there is none), as cel-go.
    if (operand.kind() == Type::Kind::kOptional) {
      base = &operand.params()[0];
      through_optional = true;
    }
    switch (base->kind()) {
      case Type::Kind::kDyn:
      case Type::Kind::kAny:
        break;
      case Type::Kind::kMap:
        field = base->params()[1];
        break;
      case Type::Kind::kObject: {
        const Type* declared =
            base->name() == "kubernetes.DRADevice" ? DeviceFieldType(e.name) : nullptr;
        if (declared == nullptr) {
          return Fail(e.offset, StrCat("undefined field '", e.name, "' of ", base->name()));
        }
        field = *declared;
        break;
      }
      default:
        return Fail(e.offset,
                    StrCat("type '", base->ToString(), "' does not support field selection"));
    }
    if (e.test_only)
      e.type = Type::Bool();
    else if (e.optional || through_optional)
      e.type = Type::Optional(field);
    else
      e.type = field;
    return true;
  }

  bool VisitCall(Expr& e) {
    const FunctionRegistry& registry = Functions();
    if (e.target) {
      bool root = false;
      auto prefix = QualifiedName(*e.target, &root);
      if (prefix && env_.Find(*prefix) < 0) {
        std::string qualified = StrCat(*prefix, ".", e.name);
        if (registry.HasName(qualified)) {
          e.name = qualified;
          e.target.reset();
        }
      }
    }
    // Literals anywhere under string.format may mix types even where
    // literals must be homogeneous (cel-go's string format validator
    // exempts the function).
    const bool format_call = e.target && e.name == "format";
    format_depth_ += format_call;
    if (e.target && !Visit(e.target)) return false;
    for (ExprPtr& arg : e.args) {
      if (!Visit(arg)) return false;
    }
    format_depth_ -= format_call;
    if (!e.target) {
      if (e.name == "_&&_") e.op = Op::kAnd;
      if (e.name == "_||_") e.op = Op::kOr;
      if (e.name == "_?_:_") e.op = Op::kConditional;
      if (e.name == "_[_]") e.op = Op::kIndex;
    }
    if (e.name == "_&&_" || e.name == "_||_") {
      for (const ExprPtr& arg : e.args) {
        if (check_ && !Compatible(Type::Bool(), arg->type)) {
          return Fail(arg->offset, StrCat("expected bool for '", e.name == "_&&_" ? "&&" : "||",
                                          "' but found '", arg->type.ToString(), "'"));
        }
      }
      e.type = Type::Bool();
      return true;
    }
    if (e.name == "_?_:_") {
      const Type &cond = e.args[0]->type, &yes = e.args[1]->type, &no = e.args[2]->type;
      if (check_ && !Compatible(Type::Bool(), cond)) {
        return Fail(e.args[0]->offset,
                    StrCat("condition must be bool, not '", cond.ToString(), "'"));
      }
      if (check_ && !Compatible(yes, no)) {
        return Fail(e.offset, StrCat("no matching overload for '_?_:_': branches are '",
                                     yes.ToString(), "' and '", no.ToString(), "'"));
      }
      e.type = yes.is_dynamic() ? no : yes;
      return true;
    }
    size_t arity = e.args.size() + (e.target ? 1 : 0);
    e.function = registry.Find(e.name, e.target != nullptr, arity);
    if (e.function == nullptr) {
      if (!check_) return true;
      if (registry.HasName(e.name)) {
        return Fail(e.offset, StrCat("found no matching overload for '", e.name, "' with ", arity,
                                     " argument", arity == 1 ? "" : "s",
                                     e.target ? " (receiver included)" : ""));
      }
      return Fail(e.offset, StrCat("undeclared reference to '", e.name, "'"));
    }
    if (!CompileRegex(e)) return false;
    if (!check_) return true;
    std::vector<const Type*> arg_types;
    if (e.target) arg_types.push_back(&e.target->type);
    for (const ExprPtr& arg : e.args) arg_types.push_back(&arg->type);
    std::optional<Type> result;
    bool mixed = false;
    for (const Overload& overload : e.function->overloads) {
      Bindings bindings;
      bool ok = true;
      for (size_t i = 0; i < arg_types.size() && ok; ++i)
        ok = Assignable(overload.params[i], *arg_types[i], bindings);
      if (!ok) continue;
      Type r = Substitute(overload.result, bindings);
      if (!result)
        result = r;
      else if (*result != r)
        mixed = true;
    }
    if (!result) {
      std::vector<std::string> names;
      for (const Type* t : arg_types) names.push_back(t->ToString());
      return Fail(e.offset, StrCat("found no matching overload for '", e.name, "' applied to (",
                                   Join(names, ", "), ")"));
    }
    e.type = mixed ? Type::Dyn() : *result;
    if (format_call) return ValidateFormat(e);
    return true;
  }

  // cel-go's string format validator: a constant format string with a list
  // literal of arguments is checked when compiled, clause syntax, argument
  // count and each argument's static type.
  bool ValidateFormat(const Expr& e) {
    if (e.target->kind != ExprKind::kConst || e.target->value.kind() != Kind::kString ||
        e.args.size() != 1 || e.args[0]->kind != ExprKind::kList) {
      return true;
    }
    FormatArgumentChecker checker(e.args[0]->args);
    std::string error = WalkFormat(e.target->value.str(), e.args[0]->args.size(), checker);
    if (!error.empty()) return Fail(checker.bad_offset >= 0 ? checker.bad_offset : e.offset, error);
    if (checker.requested < e.args[0]->args.size()) {
      return Fail(e.offset, StrCat("too many arguments supplied to string.format (expected ",
                                   checker.requested, ", got ", e.args[0]->args.size(), ")"));
    }
    return true;
  }

  // cel-go's name of a static type in format errors.
  static std::string FormatTypeName(const Type& t) {
    switch (t.kind()) {
      case Type::Kind::kList:
        return "list";
      case Type::Kind::kMap:
        return "map";
      case Type::Kind::kOptional:
        return "optional_type";
      case Type::Kind::kType:
        return "type";
      case Type::Kind::kNull:
        return "null_type";
      case Type::Kind::kAny:
        return "google.protobuf.Any";
      case Type::Kind::kDuration:
        return "google.protobuf.Duration";
      case Type::Kind::kTimestamp:
        return "google.protobuf.Timestamp";
      case Type::Kind::kQuantity:
        return "kubernetes.Quantity";
      case Type::Kind::kSemver:
        return "kubernetes.Semver";
      default:
        return t.ToString();
    }
  }

  class FormatArgumentChecker : public FormatVisitor {
   public:
    explicit FormatArgumentChecker(const std::vector<ExprPtr>& args) : args_(args) {}
    void Text(std::string_view) override {}
    std::string Clause(size_t index, char verb, int) override {
      ++requested;
      const Expr* bad = verb == 's' ? UnprintableIn(*args_[index]) : args_[index].get();
      if (verb != 's' && FormatVerbAccepts(verb, bad->type.kind())) bad = nullptr;
      if (bad == nullptr) return "";
      bad_offset = bad->offset;
      return FormatClauseError(verb, FormatTypeName(bad->type));
    }
    size_t requested = 0;
    int32_t bad_offset = -1;

   private:
    // The first part %s cannot print, looking into list and map literals.
    static const Expr* UnprintableIn(const Expr& e) {
      if (!FormatVerbAccepts('s', e.type.kind())) return &e;
      if (e.kind == ExprKind::kList || e.kind == ExprKind::kMap) {
        for (const ExprPtr& part : e.args) {
          if (const Expr* bad = UnprintableIn(*part)) return bad;
        }
      }
      return nullptr;
    }
    const std::vector<ExprPtr>& args_;
  };

  // A constant pattern is compiled once; Kubernetes rejects a bad one when
  // the selector is compiled.
  bool CompileRegex(Expr& e) {
    const Expr* pattern = nullptr;
    if ((e.name == "matches" || e.name == "find" || e.name == "findAll") && e.target &&
        !e.args.empty()) {
      pattern = e.args[0].get();
    } else if (e.name == "matches" && !e.target && e.args.size() == 2) {
      pattern = e.args[1].get();
    }
    if (pattern == nullptr || pattern->kind != ExprKind::kConst ||
        pattern->value.kind() != Kind::kString) {
      return true;
    }
    auto re = std::make_shared<RE2>(pattern->value.str(), RE2::Quiet);
    if (re->ok()) {
      e.regex = std::move(re);
      return true;
    }
    if (env_.options().kubernetes) {
      return Fail(pattern->offset, StrCat("invalid ", e.name, " argument: ", re->error()));
    }
    return true;
  }

  // The common type of aggregate literal parts, or an error when the
  // environment requires homogeneous literals.
  // A part of an aggregate literal: its type (the payload of an optional
  // entry, [?x]) and where it is.
  struct Part {
    const Type* type;
    int32_t offset;
  };

  static Part EntryPart(const Expr& part, bool optional) {
    if (optional && part.type.kind() == Type::Kind::kOptional)
      return {&part.type.params()[0], part.offset};
    return {&part.type, part.offset};
  }

  bool JoinTypes(const std::vector<Part>& parts, Type* out) {
    std::optional<Type> joined;
    bool mixed = false;
    for (const Part& part : parts) {
      const Type& t = *part.type;
      if (!joined) {
        joined = t;
      } else if (!Compatible(*joined, t)) {
        if (env_.options().kubernetes && check_ && format_depth_ == 0) {
          return Fail(part.offset, StrCat("expected type '", joined->ToString(), "' but found '",
                                          t.ToString(), "'"));
        }
        mixed = true;
      } else if (joined->is_dynamic() && !t.is_dynamic()) {
        joined = t;
      }
    }
    *out = (!joined || mixed) ? Type::Dyn() : *joined;
    return true;
  }

  bool VisitList(Expr& e) {
    std::vector<Part> elems;
    for (size_t i = 0; i < e.args.size(); ++i) {
      if (!Visit(e.args[i])) return false;
      elems.push_back(EntryPart(*e.args[i], e.optional_entries[i]));
    }
    Type elem;
    if (!JoinTypes(elems, &elem)) return false;
    e.type = Type::List(elem);
    return true;
  }

  bool VisitMap(Expr& e) {
    std::vector<Part> keys, values;
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      if (!Visit(e.args[i]) || !Visit(e.args[i + 1])) return false;
      keys.push_back(EntryPart(*e.args[i], false));
      values.push_back(EntryPart(*e.args[i + 1], e.optional_entries[i / 2]));
    }
    Type key, value;
    if (!JoinTypes(keys, &key) || !JoinTypes(values, &value)) return false;
    e.type = Type::Map(key, value);
    return true;
  }

  bool VisitComprehension(Expr& e) {
    size_t base = locals_.size();
    e.variable = static_cast<int32_t>(base);
    if (e.macro == Macro::kBind) {
      if (!Visit(e.args[0])) return false;
      PushLocal(e.name, e.args[0]->type);
      bool ok = Visit(e.args[1]);
      locals_.resize(base);
      if (ok) e.type = e.args[1]->type;
      return ok;
    }
    if (!Visit(e.target)) return false;
    const Type& range = e.target->type;
    Type first = Type::Dyn(), second = Type::Dyn();
    if (e.macro == Macro::kOptMap || e.macro == Macro::kOptFlatMap) {
      if (check_ && range.kind() != Type::Kind::kOptional && !range.is_dynamic()) {
        return Fail(e.target->offset,
                    StrCat("optMap needs an optional value, not '", range.ToString(), "'"));
      }
      if (range.kind() == Type::Kind::kOptional) first = range.params()[0];
    } else if (check_) {
      switch (range.kind()) {
        case Type::Kind::kList:
          first = e.name2.empty() ? range.params()[0] : Type::Int();
          second = range.params()[0];
          break;
        case Type::Kind::kMap:
          first = range.params()[0];
          second = range.params()[1];
          break;
        case Type::Kind::kDyn:
          break;
        default:
          return Fail(e.target->offset,
                      StrCat("expression of type '", range.ToString(),
                             "' cannot be the range of a comprehension (must be list, "
                             "map, or dynamic)"));
      }
    }
    PushLocal(e.name, first);
    if (!e.name2.empty()) PushLocal(e.name2, second);
    for (ExprPtr& arg : e.args) {
      if (!Visit(arg)) {
        locals_.resize(base);
        return false;
      }
    }
    locals_.resize(base);
    if (!check_) return true;
    // Predicates (all but the transform) must be bool.
    size_t predicates = 0;
    switch (e.macro) {
      case Macro::kAll:
      case Macro::kExists:
      case Macro::kExistsOne:
      case Macro::kFilter:
        predicates = 1;
        break;
      case Macro::kMapFilter:
        predicates = 1;
        break;
      case Macro::kTransformList:
      case Macro::kTransformMap:
      case Macro::kTransformMapEntry:
        predicates = e.args.size() == 2 ? 1 : 0;
        break;
      default:
        break;
    }
    for (size_t i = 0; i < predicates; ++i) {
      if (!Compatible(Type::Bool(), e.args[i]->type)) {
        return Fail(e.args[i]->offset,
                    StrCat("predicate must be bool, not '", e.args[i]->type.ToString(), "'"));
      }
    }
    const Type& last = e.args.back()->type;
    switch (e.macro) {
      case Macro::kAll:
      case Macro::kExists:
      case Macro::kExistsOne:
        e.type = Type::Bool();
        break;
      case Macro::kMap:
      case Macro::kMapFilter:
      case Macro::kTransformList:
        e.type = Type::List(last);
        break;
      case Macro::kFilter:
        e.type = Type::List(first);
        break;
      case Macro::kTransformMap:
        e.type = Type::Map(first, last);
        break;
      case Macro::kTransformMapEntry:
        e.type = last.kind() == Type::Kind::kMap ? last : Type::Map(Type::Dyn(), Type::Dyn());
        break;
      case Macro::kOptMap:
        e.type = Type::Optional(last);
        break;
      case Macro::kOptFlatMap:
        e.type = last;
        break;
      case Macro::kBind:
        break;
    }
    return true;
  }

  const Env& env_;
  bool check_;
  int format_depth_ = 0;  // string.format calls around the node being checked
  std::string* error_;
  int32_t* error_offset_;
  std::vector<Local> locals_;
  int max_locals_ = 0;
};

}  // namespace

const Type* DeviceFieldType(std::string_view field) {
  static const Type kDriver = Type::String();
  static const Type kAttributes = Type::Map(Type::String(), Type::Map(Type::String(), Type::Any()));
  static const Type kCapacity =
      Type::Map(Type::String(), Type::Map(Type::String(), Type::Quantity()));
  if (field == "driver") return &kDriver;
  if (field == "attributes") return &kAttributes;
  if (field == "capacity") return &kCapacity;
  return nullptr;
}

absl::Status ResolveAndCheck(Expr& root, const Env& env, CompileResult* result, std::string* error,
                             int32_t* error_offset) {
  Checker checker(env, error, error_offset);
  // Visit takes the owning pointer so nodes can be rewritten in place; the
  // root is owned by the caller, so wrap it for the duration.
  ExprPtr holder(&root);
  bool ok = checker.Visit(holder);
  (void)holder.release();
  result->locals = checker.max_locals();
  if (!ok) return absl::InvalidArgumentError(*error);
  return absl::OkStatus();
}

}  // namespace canhazgpu::cel::internal
