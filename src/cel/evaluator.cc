// The tree-walking interpreter. Strict calls return the first error among
// their arguments; && and || absorb errors as CEL requires; comprehensions
// check the cost limit on every iteration so no expression can run away.
#include "absl/container/inlined_vector.h"
#include "cel/program.h"
#include "core/strings.h"

namespace canhazgpu::cel::internal {
namespace {

Value WithOffset(Value error, int32_t offset) {
  if (error.error().offset >= 0) return error;
  return Value::Error(error.error().message, offset);
}

class Evaluator {
 public:
  Evaluator(const Value* variables, Value* locals, EvalContext& ctx)
      : variables_(variables), locals_(locals), ctx_(ctx) {}

  Value Eval(const Expr& e) {
    ++ctx_.cost;
    switch (e.kind) {
      case ExprKind::kConst:
        return e.value;
      case ExprKind::kIdent:
        if (e.variable >= 0) return variables_[e.variable];
        if (e.variable < -1) return locals_[-2 - e.variable];
        return Value::Error(StrCat("undeclared reference to '", e.name, "'"), e.offset);
      case ExprKind::kSelect:
        return Select(e);
      case ExprKind::kCall:
        return Call(e);
      case ExprKind::kList:
        return List(e);
      case ExprKind::kMap:
        return Map(e);
      case ExprKind::kComprehension:
        return Comprehension(e);
    }
    return Value::Error("unknown expression", e.offset);
  }

 private:
  Value Select(const Expr& e) {
    Value scratch;
    const Value& operand = Ref(*e.target, scratch);
    if (operand.is_error()) return operand;
    if (operand.kind() == Kind::kOptional && !e.test_only) {
      if (operand.optional_value() == nullptr) return operand;
      return SelectField(e, *operand.optional_value(), /*optional=*/true);
    }
    return SelectField(e, operand, e.optional);
  }

  Value SelectField(const Expr& e, const Value& operand, bool optional) {
    if (operand.kind() != Kind::kMap) {
      return Value::Error(
          StrCat("type '", operand.TypeName(), "' does not support field selection"), e.offset);
    }
    const MapData& map = operand.map();
    const Value* found = map.FindString(e.name);
    if (e.test_only) return Value::Bool(found != nullptr || map.missing_key_is_empty_map);
    if (optional) return found ? Value::OptionalOf(*found) : Value::OptionalNone();
    if (found) return *found;
    if (map.missing_key_is_empty_map) return Value::Map(MapData{});
    return Value::Error(StrCat("no such key: ", e.name), e.offset);
  }

  Value Logical(const Expr& e, bool is_and) {
    Value left = Eval(*e.args[0]);
    if (left.is_bool(!is_and)) return left;  // false && x, true || x
    Value right = Eval(*e.args[1]);
    if (right.is_bool(!is_and)) return right;
    if (left.kind() == Kind::kBool && right.kind() == Kind::kBool) return right;
    if (left.is_error()) return left;
    if (right.is_error()) return right;
    return Value::Error(StrCat("no matching overload for '", is_and ? "&&" : "||", "'"), e.offset);
  }

  // A reference to the value of `e` without copying it where it already
  // exists (a variable, a constant, a map entry reached through them);
  // otherwise the value is computed into `scratch`.
  const Value& Ref(const Expr& e, Value& scratch) {
    switch (e.kind) {
      case ExprKind::kConst:
        ++ctx_.cost;
        return e.value;
      case ExprKind::kIdent:
        if (e.variable >= 0) {
          ++ctx_.cost;
          return variables_[e.variable];
        }
        if (e.variable < -1) {
          ++ctx_.cost;
          return locals_[-2 - e.variable];
        }
        break;
      case ExprKind::kSelect:
        if (!e.test_only && !e.optional) {
          if (const Value* found = FindEntry(e, *e.target, nullptr, &e.name, scratch))
            return *found;
        }
        break;
      case ExprKind::kCall:
        if (e.op == Op::kIndex && e.args[1]->kind == ExprKind::kConst) {
          if (const Value* found = FindEntry(e, *e.args[0], &e.args[1]->value, nullptr, scratch))
            return *found;
        }
        break;
      default:
        break;
    }
    scratch = Eval(e);
    return scratch;
  }

  // The entry of the map `operand` evaluates to, by key or field name, or
  // nullptr to take the general path (not a map, missing key).
  const Value* FindEntry(const Expr& e, const Expr& operand, const Value* key,
                         const std::string* field, Value& scratch) {
    Value inner;
    const Value& map = Ref(operand, inner);
    if (map.kind() != Kind::kMap) return nullptr;
    const Value* found;
    if (key != nullptr && key->kind() != Kind::kString) {
      found = map.map().Find(*key);
    } else {
      const int32_t guess = e.hint.get();
      int32_t hint = guess;
      found = map.map().FindString(key != nullptr ? std::string_view(key->str()) : *field, &hint);
      if (hint != guess) e.hint.set(hint);  // no write, no shared cache line, when it was right
    }
    if (found == nullptr) return nullptr;
    ++ctx_.cost;
    if (&map == &inner) {  // the map is a temporary: keep a copy of the entry
      scratch = *found;
      return &scratch;
    }
    return found;
  }

  Value Call(const Expr& e) {
    switch (e.op) {
      case Op::kAnd:
        return Logical(e, true);
      case Op::kOr:
        return Logical(e, false);
      case Op::kConditional: {
        Value cond = Eval(*e.args[0]);
        if (cond.kind() == Kind::kBool) return Eval(*e.args[cond.bool_value() ? 1 : 2]);
        if (cond.is_error()) return cond;
        return Value::Error("no matching overload for '_?_:_'", e.offset);
      }
      default:
        break;
    }
    size_t count = e.args.size() + (e.target ? 1 : 0);
    // Most calls have at most three operands: their scratch values live on
    // the stack without a container to construct and tear down.
    Value small[3];
    std::vector<Value> large(count > 3 ? count : 0);
    Value* scratch = count > 3 ? large.data() : small;
    absl::InlinedVector<const Value*, 3> args;
    if (e.target) {
      const Value& v = Ref(*e.target, scratch[0]);
      if (v.is_error()) return v;
      args.push_back(&v);
    }
    for (const ExprPtr& arg : e.args) {
      const Value& v = Ref(*arg, scratch[args.size()]);
      if (v.is_error()) return v;
      args.push_back(&v);
    }
    // Unresolved at compile time (only without type checking): an error
    // here, so that || and && may still absorb it.
    const FunctionGroup* group = e.function;
    if (group == nullptr) {
      return Value::Error(
          StrCat(Functions().HasName(e.name) ? "no matching overload for '" : "unbound function '",
                 e.name, "'"),
          e.offset);
    }
    ctx_.regex = e.regex.get();
    Value v = e.overload >= 0 ? group->overloads[static_cast<size_t>(e.overload)].impl(
                                    args.data(), args.size(), ctx_)
                              : DispatchWithHint(e, *group, args.data(), args.size());
    ctx_.regex = nullptr;
    if (v.is_error()) return WithOffset(std::move(v), e.offset);
    return v;
  }

  // Dispatch by the arguments' kinds, trying the overload that matched last
  // time at this node first.
  Value DispatchWithHint(const Expr& e, const FunctionGroup& group, const Value* const* args,
                         size_t count) {
    const int32_t guess = e.hint.get();
    if (guess >= 0 && static_cast<size_t>(guess) < group.overloads.size()) {
      const Overload& o = group.overloads[static_cast<size_t>(guess)];
      bool match = true;
      for (size_t i = 0; i < count && match; ++i) match = KindMatches(o.params[i], *args[i]);
      if (match) return o.impl(args, count, ctx_);
    }
    int index = MatchingOverload(group, args, count);
    if (index < 0) return Dispatch(group, args, count, ctx_);  // lenient, or the error
    e.hint.set(index);
    return group.overloads[static_cast<size_t>(index)].impl(args, count, ctx_);
  }

  Value List(const Expr& e) {
    ValueList items;
    items.reserve(e.args.size());
    for (size_t i = 0; i < e.args.size(); ++i) {
      Value v = Eval(*e.args[i]);
      if (v.is_error()) return v;
      if (e.optional_entries[i]) {
        if (v.kind() != Kind::kOptional) {
          return Value::Error("optional list element must be an optional value", e.args[i]->offset);
        }
        if (v.optional_value() != nullptr) items.push_back(*v.optional_value());
        continue;
      }
      items.push_back(std::move(v));
    }
    return Value::List(std::move(items));
  }

  Value Map(const Expr& e) {
    MapData map;
    map.entries.reserve(e.args.size() / 2);
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      Value key = Eval(*e.args[i]);
      if (key.is_error()) return key;
      Value value = Eval(*e.args[i + 1]);
      if (value.is_error()) return value;
      if (!IsValidMapKey(key)) {
        return Value::Error(StrCat("unsupported key type: ", key.TypeName()), e.args[i]->offset);
      }
      if (map.Find(key) != nullptr) {
        return Value::Error(StrCat("Failed with repeated key: ", key.DebugString()),
                            e.args[i]->offset);
      }
      if (e.optional_entries[i / 2]) {
        if (value.kind() != Kind::kOptional) {
          return Value::Error("optional map entry must be an optional value",
                              e.args[i + 1]->offset);
        }
        if (value.optional_value() == nullptr) continue;
        value = *value.optional_value();
      }
      map.entries.emplace_back(std::move(key), std::move(value));
    }
    return Value::Map(std::move(map));
  }

  // A filter's predicate: a bool, or an error (also for a non-bool).
  Value Predicate(const Expr& p) {
    Value keep = Eval(p);
    if (keep.kind() == Kind::kBool || keep.is_error()) return keep;
    return Value::Error("predicate result is not a bool", p.offset);
  }

  Value CostExceeded(const Expr& e) {
    return Value::Error("operation cancelled: actual cost limit exceeded", e.offset);
  }

  Value Comprehension(const Expr& e) {
    Value* first = &locals_[e.variable];
    if (e.macro == Macro::kBind) {
      *first = Eval(*e.args[0]);
      return Eval(*e.args[1]);
    }
    Value range = Eval(*e.target);
    if (range.is_error()) return range;
    if (e.macro == Macro::kOptMap || e.macro == Macro::kOptFlatMap) {
      if (range.kind() != Kind::kOptional)
        return Value::Error("optMap needs an optional value", e.offset);
      if (range.optional_value() == nullptr) return range;
      *first = *range.optional_value();
      Value body = Eval(*e.args[0]);
      if (body.is_error() || e.macro == Macro::kOptFlatMap) {
        if (!body.is_error() && body.kind() != Kind::kOptional) {
          return Value::Error("optFlatMap body must return an optional value", e.offset);
        }
        return body;
      }
      return Value::OptionalOf(std::move(body));
    }
    if (range.kind() != Kind::kList && range.kind() != Kind::kMap) {
      return Value::Error(StrCat("expected iterable type, not ", range.TypeName()),
                          e.target->offset);
    }
    bool two = !e.name2.empty();
    Value* second = two ? &locals_[e.variable + 1] : nullptr;
    bool is_list = range.kind() == Kind::kList;
    size_t size = is_list ? range.list().size() : range.map().entries.size();
    // Binds the iteration variables for element i.
    auto bind = [&](size_t i) {
      if (is_list) {
        if (two) {
          *first = Value::Int(static_cast<int64_t>(i));
          *second = range.list()[i];
        } else {
          *first = range.list()[i];
        }
      } else {
        *first = range.map().entries[i].first;
        if (two) *second = range.map().entries[i].second;
      }
    };
    switch (e.macro) {
      case Macro::kAll:
      case Macro::kExists: {
        bool is_all = e.macro == Macro::kAll;
        Value error;
        bool has_error = false;
        for (size_t i = 0; i < size; ++i) {
          if (!ctx_.Charge(1)) return CostExceeded(e);
          bind(i);
          Value v = Eval(*e.args[0]);
          if (v.is_bool(!is_all)) return v;  // a false in all(), a true in exists()
          if (v.kind() != Kind::kBool && !has_error) {
            has_error = true;
            error = v.is_error()
                        ? v
                        : Value::Error("predicate result is not a bool", e.args[0]->offset);
          }
        }
        return has_error ? error : Value::Bool(is_all);
      }
      case Macro::kExistsOne: {
        int count = 0;
        for (size_t i = 0; i < size; ++i) {
          if (!ctx_.Charge(1)) return CostExceeded(e);
          bind(i);
          Value v = Eval(*e.args[0]);
          if (v.is_error()) return v;
          if (v.kind() != Kind::kBool)
            return Value::Error("predicate result is not a bool", e.args[0]->offset);
          count += v.bool_value();
        }
        return Value::Bool(count == 1);
      }
      case Macro::kMap:
      case Macro::kMapFilter:
      case Macro::kFilter:
      case Macro::kTransformList: {
        ValueList out;
        bool filtered = e.macro == Macro::kFilter || e.macro == Macro::kMapFilter ||
                        (e.macro == Macro::kTransformList && e.args.size() == 2);
        for (size_t i = 0; i < size; ++i) {
          if (!ctx_.Charge(1)) return CostExceeded(e);
          bind(i);
          if (filtered) {
            Value keep = Predicate(*e.args[0]);
            if (keep.is_error()) return keep;
            if (!keep.bool_value()) continue;
          }
          if (e.macro == Macro::kFilter) {
            out.push_back(*first);
            continue;
          }
          Value v = Eval(*e.args.back());
          if (v.is_error()) return v;
          out.push_back(std::move(v));
        }
        return Value::List(std::move(out));
      }
      case Macro::kTransformMap:
      case Macro::kTransformMapEntry: {
        MapData out;
        bool filtered = e.args.size() == 2;
        for (size_t i = 0; i < size; ++i) {
          if (!ctx_.Charge(1)) return CostExceeded(e);
          bind(i);
          if (filtered) {
            Value keep = Predicate(*e.args[0]);
            if (keep.is_error()) return keep;
            if (!keep.bool_value()) continue;
          }
          Value v = Eval(*e.args.back());
          if (v.is_error()) return v;
          if (e.macro == Macro::kTransformMap) {
            out.entries.emplace_back(*first, std::move(v));
            continue;
          }
          if (v.kind() != Kind::kMap)
            return Value::Error("transformMapEntry must produce a map", e.offset);
          for (const auto& [k, val] : v.map().entries) {
            if (out.Find(k) != nullptr) {
              return Value::Error(StrCat("insert failed: key ", k.DebugString(), " already exists"),
                                  e.offset);
            }
            out.entries.emplace_back(k, val);
          }
        }
        return Value::Map(std::move(out));
      }
      default:
        return Value::Error("unsupported macro", e.offset);
    }
  }

  const Value* variables_;
  Value* locals_;
  EvalContext& ctx_;
};

}  // namespace

Value EvaluateExpr(const Expr& root, const Value* variables, int locals, EvalContext& ctx) {
  absl::InlinedVector<Value, 4> slots(static_cast<size_t>(locals));
  Evaluator evaluator(variables, slots.data(), ctx);
  Value result = evaluator.Eval(root);
  if (ctx.cost > ctx.cost_limit && !result.is_error()) {
    return Value::Error("operation cancelled: actual cost limit exceeded", root.offset);
  }
  return result;
}

}  // namespace canhazgpu::cel::internal
