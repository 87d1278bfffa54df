// The tree-walking interpreter. Strict calls return the first error among
// their arguments; && and || absorb errors as CEL requires; comprehensions
// check the cost limit on every iteration so no expression can run away.
#include "absl/container/inlined_vector.h"
#include "cel/program.h"
#include "core/strings.h"

namespace canhazgpu::cel::internal {
namespace {

// Work on a string or bytes value (a scan, a copy, a comparison) grows with
// its length: one unit per 10 bytes, as Kubernetes charges string traversal,
// charged before the call so that no call runs far past the limit.
int64_t TextCost(const Value& v) {
  if (v.kind() != Kind::kString && v.kind() != Kind::kBytes) return 0;
  return static_cast<int64_t>(v.str().size() / 10);
}

Value WithOffset(Value error, int32_t offset) {
  if (error.error().offset >= 0) return error;
  return Value::Error(error.error().message, offset);
}

class Evaluator {
 public:
  Evaluator(const Value* variables, Value* locals, const Value** memos, EvalContext& ctx)
      : variables_(variables), locals_(locals), memos_(memos), ctx_(ctx) {}

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
      case ExprKind::kCall:  // the planned shapes first, without Call's frame
        if (e.comparison != nullptr) return Comparison(e);
        if (e.chain != nullptr) return Chain(e, e.op == Op::kAnd);  // unplanned: Call, Logical
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
    if (e.path != nullptr) {
      if (const Value* found = Walk(*e.path)) return *found;
    }
    Value scratch;
    return SelectOn(e, Ref(*e.target, scratch));
  }

  // The general path of a select once its operand is known.
  Value SelectOn(const Expr& e, const Value& operand) {
    if (operand.is_error()) return operand;
    if (operand.kind() == Kind::kOptional) {
      if (operand.optional_value() == nullptr) return e.test_only ? Value::Bool(false) : operand;
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
    StepBudget steps = ctx_.Steps();
    const Value* found = map.FindString(e.name, &steps);
    if (!ctx_.Charge(steps)) return CostExceeded(e);
    if (e.test_only) return Value::Bool(found != nullptr || map.missing_key_is_empty_map);
    if (optional) return found ? Value::OptionalOf(*found) : Value::OptionalNone();
    if (found) return *found;
    if (map.missing_key_is_empty_map) return Value::Map(MapData{});
    return Value::Error(StrCat("no such key: ", e.name), e.offset);
  }

  // One && (||) as written, for an expression the planner did not see.
  Value Logical(const Expr& e, bool is_and) {
    Value left = Eval(*e.args[0]);
    if (left.is_bool(!is_and)) return Value::Bool(!is_and);  // false && x, true || x
    Value right = Eval(*e.args[1]);
    if (right.is_bool(!is_and)) return Value::Bool(!is_and);
    return Combine(e, std::move(left), std::move(right), is_and);
  }

  // An && (||) whose operands are known and neither decides alone.
  static Value Combine(const Expr& e, Value left, Value right, bool is_and) {
    if (left.kind() == Kind::kBool && right.kind() == Kind::kBool) return Value::Bool(is_and);
    if (left.is_error()) return left;
    if (right.is_error()) return right;
    return Value::Error(StrCat("no matching overload for '", is_and ? "&&" : "||", "'"), e.offset);
  }

  // A chain of && (||) operands in one loop, with CEL's error-absorbing
  // rules: the first false (true) decides, whatever errors came before;
  // where an operand is an error or not a bool and none decides, the
  // operators are applied over the values already computed, so the result
  // (which error, at which operator) is what the nested operators give and
  // nothing runs twice.
  Value Chain(const Expr& e, bool is_and) {
    const std::vector<const Expr*>& operands = e.chain->operands;
    ctx_.cost += e.chain->operators - 1;  // Eval charged the top node
    size_t i = 0;
    for (; i < operands.size(); ++i) {
      Value v = Eval(*operands[i]);
      if (v.kind() != Kind::kBool) {
        return ChainWithOthers(e, is_and, i, std::move(v));
      }
      if (v.bool_value() != is_and) return Value::Bool(!is_and);
    }
    return Value::Bool(is_and);
  }

  // The rest of a chain once operand `first` gave `value`, neither true nor
  // false; the operands before it all gave the identity (true for &&).
  Value ChainWithOthers(const Expr& e, bool is_and, size_t first, Value value) {
    const std::vector<const Expr*>& operands = e.chain->operands;
    absl::InlinedVector<Value, 4> values;
    values.push_back(std::move(value));
    for (size_t i = first + 1; i < operands.size(); ++i) {
      Value v = Eval(*operands[i]);
      if (v.is_bool(!is_and)) return Value::Bool(!is_and);
      values.push_back(std::move(v));
    }
    size_t next = 0;
    return Regroup(e, is_and, first, values, &next);
  }

  // The nested operators' result over the operands' values, no operand
  // being the deciding one. `next` counts operands in source order.
  static Value Regroup(const Expr& node, bool is_and, size_t first,
                       const absl::InlinedVector<Value, 4>& values, size_t* next) {
    if (node.kind != ExprKind::kCall || node.op != (is_and ? Op::kAnd : Op::kOr) ||
        node.args.size() != 2) {
      const size_t i = (*next)++;
      return i < first ? Value::Bool(is_and) : values[i - first];
    }
    Value left = Regroup(*node.args[0], is_and, first, values, next);
    Value right = Regroup(*node.args[1], is_and, first, values, next);
    return Combine(node, std::move(left), std::move(right), is_and);
  }

  // A reference to the value of `e` without copying it where it already
  // exists (a variable, a constant, a map entry reached through them);
  // otherwise the value is computed into `scratch`.
  const Value& Ref(const Expr& e, Value& scratch) {
    if (e.path != nullptr) {
      if (const Value* found = Walk(*e.path)) {
        ++ctx_.cost;  // Eval's unit for the node
        return *found;
      }
    }
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
        if (!e.test_only && !e.optional) return RefEntry(e, *e.target, nullptr, &e.name, scratch);
        break;
      case ExprKind::kCall:
        if (e.op == Op::kIndex && e.args[1]->kind == ExprKind::kConst)
          return RefEntry(e, *e.args[0], &e.args[1]->value, nullptr, scratch);
        break;
      default:
        break;
    }
    scratch = Eval(e);
    return scratch;
  }

  // `e` (a select, or an index with the constant `key`) as a reference to
  // the entry of the map its operand evaluates to. Where that is not a map
  // holding the entry, the general path goes on from the operand's value:
  // evaluating `e` afresh would evaluate the operand again, at every level
  // of a chain (`m["a"]["a"]["a"]`), which is exponential.
  const Value& RefEntry(const Expr& e, const Expr& operand, const Value* key,
                        const std::string* field, Value& scratch) {
    Value inner;
    const Value& map = Ref(operand, inner);
    if (map.kind() == Kind::kMap) {
      if (const Value* found = FindEntry(e, map, key, field)) {
        ++ctx_.cost;
        if (&map != &inner) return *found;
        scratch = *found;  // the map is a temporary: keep a copy of the entry
        return scratch;
      }
    }
    ++ctx_.cost;  // Eval's unit for the node
    if (key == nullptr) {
      scratch = SelectOn(e, map);
    } else if (map.is_error()) {
      scratch = map;
    } else {
      ++ctx_.cost;  // the key, an argument the general path evaluates
      const Value* args[] = {&map, key};
      scratch = Invoke(e, args, 2);
    }
    return scratch;
  }

  // The entry of `map` by key or field name, or nullptr (a missing key: the
  // general path says why, or reads a missing domain as an empty map).
  // A lookup that spends the cost limit finds nothing: the evaluation ends
  // in the limit's error (Evaluate checks it last).
  const Value* FindEntry(const Expr& e, const Value& map, const Value* key,
                         const std::string* field) {
    StepBudget steps = ctx_.Steps();
    const Value* found;
    if (key != nullptr && key->kind() != Kind::kString) {
      found = map.map().Find(*key, &steps);
    } else {
      const int32_t guess = e.hint.get();
      int32_t hint = guess;
      found = map.map().FindString(key != nullptr ? std::string_view(key->str()) : *field, &hint,
                                   &steps);
      if (hint != guess) e.hint.set(hint);  // no write, no shared cache line, when it was right
    }
    return ctx_.Charge(steps) ? found : nullptr;
  }

  // The value at the end of an attribute chain, or nullptr where a link is
  // missing or not a map: the general path then says why (or reads a
  // missing domain as an empty map).
  const Value* Walk(const AttributePath& path) {
    const Value* v = path.variable >= 0 ? &variables_[path.variable] : &locals_[-2 - path.variable];
    const AttributePath::Step* step = path.steps.data();
    const AttributePath::Step* const end = step + path.steps.size();
    StepBudget steps = ctx_.Steps();
    if (path.memo >= 0) {  // the shared prefix: walked once per evaluation
      const Value*& memo = memos_[path.memo];
      if (memo == nullptr) memo = Follow(v, step, step + path.memo_steps, steps);
      if (memo == nullptr) {
        ctx_.Charge(steps);
        return nullptr;
      }
      v = memo;
      step += path.memo_steps;
    }
    v = Follow(v, step, end, steps);
    if (!ctx_.Charge(steps)) return nullptr;  // the general path ends in the limit's error
    // The variable and each step, as the general path charges them; the
    // node itself is charged by whoever evaluates it (Eval, or Ref below).
    if (v != nullptr) ctx_.cost += static_cast<int64_t>(path.steps.size());
    return v;
  }

  // Follows steps [step, end) from `v`; nullptr where a link is missing or
  // `steps` are spent.
  static const Value* Follow(const Value* v, const AttributePath::Step* step,
                             const AttributePath::Step* end, StepBudget& steps) {
    for (; step != end && v != nullptr; ++step) {
      if (v->kind() != Kind::kMap) return nullptr;
      const MapData& map = v->map();
      // A negative guess (none yet) wraps to a huge index and fails the bound.
      const auto guess = static_cast<uint32_t>(step->hint.get());
      if (guess < map.entries.size() && IsKey(map.entries[guess].first, *step)) {
        v = &map.entries[guess].second;
        continue;
      }
      int32_t hint = -1;
      v = map.FindString(step->key, &hint, &steps);
      if (v != nullptr) step->hint.set(hint);
    }
    return v;
  }

  // A pooled key is recognised by its address; any other by its text.
  static bool IsKey(const Value& key, const AttributePath::Step& step) {
    if (step.interned != nullptr && key.identity() == step.interned) return true;
    return key.kind() == Kind::kString && key.str() == step.key;
  }

  // A relation with a constant computed in place: 1 when it holds, 0 when
  // not, -1 where the value is not of the constant's kind (the general path
  // then dispatches or fails).
  int CompareWithConstant(const ConstantComparison& c, const Value& x) {
    const Value& k = *c.constant;
    if (x.kind() != k.kind()) return -1;
    const bool ordered_kind = x.kind() == Kind::kQuantity || x.kind() == Kind::kSemver;
    const bool method = c.form != ComparisonForm::kValue;
    if (ordered_kind != method) return -1;  // the methods exist only for those two
    int order;                              // x against k: -1, 0, 1
    switch (x.kind()) {
      case Kind::kString:
        ctx_.cost += TextCost(x) + TextCost(k);  // as Invoke charges the general path
        if (c.relation == Relation::kEq || c.relation == Relation::kNe) {
          order = x.str() == k.str() ? 0 : 1;
        } else {
          const int compared = x.str().compare(k.str());  // UTF-8 byte order is code-point order
          order = (compared > 0) - (compared < 0);
        }
        break;
      case Kind::kInt:
        order = (x.int_value() > k.int_value()) - (x.int_value() < k.int_value());
        break;
      case Kind::kUint:
        order = (x.uint_value() > k.uint_value()) - (x.uint_value() < k.uint_value());
        break;
      case Kind::kQuantity:
        order = x.quantity().Compare(k.quantity());
        break;
      case Kind::kSemver:
        order = x.semver().Compare(k.semver());
        break;
      default:
        return -1;
    }
    if (c.form == ComparisonForm::kCompareTo) {  // its -1/0/1 against the relation's integer
      const int64_t r = order;
      order = (r > c.against) - (r < c.against);
    }
    if (c.constant_first) order = -order;
    return Holds(c.relation, order) ? 1 : 0;
  }

  static bool Holds(Relation relation, int order) {
    switch (relation) {
      case Relation::kEq:
        return order == 0;
      case Relation::kNe:
        return order != 0;
      case Relation::kLt:
        return order < 0;
      case Relation::kLe:
        return order <= 0;
      case Relation::kGt:
        return order > 0;
      case Relation::kGe:
        return order >= 0;
    }
    return false;
  }

  // A call the planner marked as a relation with a constant: computed in
  // place where it can be, otherwise a call like any other. A small
  // function of its own, so the common case does not pay for Call's frame.
  // The cost charged is the general path's, node for node and in its order.
  Value Comparison(const Expr& e) {
    const ConstantComparison& c = *e.comparison;
    if (c.constant_first) ++ctx_.cost;  // the constant, evaluated before the other side
    if (c.form == ComparisonForm::kCompareTo) ++ctx_.cost;  // the compareTo call's node
    Value scratch;
    const Value* x = &Ref(*c.operand, scratch);
    if (x->is_error()) return *x;                       // what the general path returns too
    if (c.form != ComparisonForm::kValue) ++ctx_.cost;  // the method's argument
    const int holds = CompareWithConstant(c, *x);
    if (holds >= 0) {
      // The relation's constant, unless it came first or the node is the method.
      if (!c.constant_first && c.form != ComparisonForm::kOrderMethod) ++ctx_.cost;
      return Value::Bool(holds == 1);
    }
    return CompareInGeneral(e, *x);
  }

  // The general path's calls, with the operand already evaluated.
  Value CompareInGeneral(const Expr& e, const Value& x) {
    const ConstantComparison& c = *e.comparison;
    if (c.form == ComparisonForm::kOrderMethod) {  // the node is the method call itself
      const Value* args[] = {&x, c.constant};
      return Invoke(e, args, 2);
    }
    const Value* compared = &x;
    Value order;
    if (c.form == ComparisonForm::kCompareTo) {  // x.compareTo(constant) first
      const Expr& call = *e.args[c.constant_first ? 1 : 0];
      const Value* args[] = {&x, c.constant};
      order = Invoke(call, args, 2);
      if (order.is_error()) return order;
      compared = &order;
    }
    if (!c.constant_first) ++ctx_.cost;
    const Value& constant = e.args[c.constant_first ? 0 : 1]->value;
    const Value* args[] = {compared, &constant};
    if (c.constant_first) std::swap(args[0], args[1]);
    return Invoke(e, args, 2);
  }

  Value Call(const Expr& e) {
    if (e.path != nullptr) {  // an index with a constant key, ending a chain
      if (const Value* found = Walk(*e.path)) {
        ++ctx_.cost;  // the key, an argument the general path evaluates
        return *found;
      }
    }
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
    return Invoke(e, args.data(), args.size());
  }

  // Calls `e`'s function on operands already evaluated (none an error).
  Value Invoke(const Expr& e, const Value* const* args, size_t count) {
    // Unresolved at compile time (only without type checking): an error
    // here, so that || and && may still absorb it.
    const FunctionGroup* group = e.function;
    if (group == nullptr) {
      return Value::Error(
          StrCat(Functions().HasName(e.name) ? "no matching overload for '" : "unbound function '",
                 e.name, "'"),
          e.offset);
    }
    // An index compares keys by length first, so it is not charged by
    // them (nor are the planner's walks down attribute chains).
    int64_t units = 0;
    for (size_t i = 0; i < count && e.op != Op::kIndex; ++i) units += TextCost(*args[i]);
    if (units > 0 && !ctx_.Charge(units)) return CostExceeded(e);
    ctx_.regex = e.regex.get();
    Value v = e.overload >= 0
                  ? group->overloads[static_cast<size_t>(e.overload)].impl(args, count, ctx_)
                  : DispatchWithHint(e, *group, args, count);
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
      StepBudget steps = ctx_.Steps();
      const bool repeated = map.Find(key, &steps) != nullptr;
      if (!ctx_.Charge(steps)) return CostExceeded(e);
      if (repeated) {
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
            StepBudget steps = ctx_.Steps();
            const bool repeated = out.Find(k, &steps) != nullptr;
            if (!ctx_.Charge(steps)) return CostExceeded(e);
            if (repeated) {
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
  const Value** memos_;  // AttributePath::memo slots, nullptr until walked
  EvalContext& ctx_;
};

}  // namespace

Value EvaluateExpr(const Expr& root, const Value* variables, int locals, int memos,
                   EvalContext& ctx) {
  // Most selectors have no comprehension and so no locals to set up, and
  // few shared prefixes: both live on the stack unless there are many.
  absl::InlinedVector<Value, 4> slots;
  if (locals > 0) slots.resize(static_cast<size_t>(locals));
  constexpr int kStackMemos = 8;
  const Value* stack_memos[kStackMemos] = {};
  std::vector<const Value*> heap_memos(memos > kStackMemos ? static_cast<size_t>(memos) : 0);
  Evaluator evaluator(variables, slots.data(),
                      memos > kStackMemos ? heap_memos.data() : stack_memos, ctx);
  Value result = evaluator.Eval(root);
  if (ctx.cost > ctx.cost_limit && !result.is_error()) {
    result = Value::Error("operation cancelled: actual cost limit exceeded", root.offset);
  }
  return result;  // one return: the result is built in the caller's slot
}

}  // namespace canhazgpu::cel::internal
