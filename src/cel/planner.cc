// The planner: after checking and constant folding, marks the shapes DRA
// selectors are made of so the evaluator can take them in one step:
// attribute chains from a variable, and relations of such a value with a
// constant. It only adds annotations; every marked node keeps its children,
// so the evaluator can always fall back to the general path, which is the
// one that reports errors.
#include <array>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "cel/program.h"

namespace canhazgpu::cel::internal {
namespace {

// One link of an attribute chain: `operand.key` or `operand["key"]`.
bool ChainLink(const Expr& e, const Expr** operand, const std::string** key) {
  if (e.kind == ExprKind::kSelect && !e.test_only && !e.optional && e.target) {
    *operand = e.target.get();
    *key = &e.name;
    return true;
  }
  if (e.kind == ExprKind::kCall && e.op == Op::kIndex && e.args.size() == 2 &&
      e.args[1]->kind == ExprKind::kConst && e.args[1]->value.kind() == Kind::kString) {
    *operand = e.args[0].get();
    *key = &e.args[1]->value.str();
    return true;
  }
  return false;
}

bool IsVariable(const Expr& e) { return e.kind == ExprKind::kIdent && e.variable != -1; }

// Fills `path` from `e` down to its variable; false when the chain does not
// start at one.
bool CollectChain(const Expr& e, AttributePath* path) {
  if (IsVariable(e)) {
    path->variable = e.variable;
    return true;
  }
  const Expr* operand;
  const std::string* key;
  if (!ChainLink(e, &operand, &key) || !CollectChain(*operand, path)) return false;
  path->steps.push_back({*key, Value::InternedKey(*key), {}});
  return true;
}

// Cheap and free of side effects, so the evaluator may compute it again on
// the general path: a variable, an attribute chain, or a call on such
// values and constants (`...driverVersion.major()`).
bool IsCheap(const Expr& e) {
  if (IsVariable(e) || e.path != nullptr || e.kind == ExprKind::kConst) return true;
  if (e.kind != ExprKind::kCall || e.op != Op::kNone || e.comparison != nullptr ||
      e.function == nullptr) {
    return false;
  }
  if (e.target && !IsCheap(*e.target)) return false;
  for (const ExprPtr& arg : e.args) {
    if (!IsCheap(*arg)) return false;
  }
  return true;
}

bool RelationOf(std::string_view function, Relation* relation) {
  static constexpr std::array<std::pair<std::string_view, Relation>, 6> kRelations = {{
      {"_==_", Relation::kEq},
      {"_!=_", Relation::kNe},
      {"_<_", Relation::kLt},
      {"_<=_", Relation::kLe},
      {"_>_", Relation::kGt},
      {"_>=_", Relation::kGe},
  }};
  for (const auto& [name, r] : kRelations) {
    if (name == function) {
      *relation = r;
      return true;
    }
  }
  return false;
}

bool IsConst(const Expr& e, Kind kind) {
  return e.kind == ExprKind::kConst && e.value.kind() == kind;
}

// `x.name(constant)` with a cheap receiver.
bool IsMethodWithConstant(const Expr& e, std::string_view name) {
  return e.kind == ExprKind::kCall && e.function != nullptr && e.name == name && e.target &&
         e.args.size() == 1 && e.args[0]->kind == ExprKind::kConst && IsCheap(*e.target);
}

// `x.isGreaterThan(constant)` or `x.isLessThan(constant)`: the compareTo
// form with the relation built in.
void PlanOrderMethod(Expr& e) {
  const bool greater = IsMethodWithConstant(e, "isGreaterThan");
  if (!greater && !IsMethodWithConstant(e, "isLessThan")) return;
  auto plan = std::make_unique<ConstantComparison>();
  plan->form = ComparisonForm::kOrderMethod;
  plan->relation = greater ? Relation::kGt : Relation::kLt;
  plan->operand = e.target.get();
  plan->constant = &e.args[0]->value;
  e.comparison = std::move(plan);
}

void PlanComparison(Expr& e) {
  Relation relation;
  if (e.target) return PlanOrderMethod(e);
  if (e.function == nullptr || e.args.size() != 2 || !RelationOf(e.name, &relation)) return;
  const bool constant_first = e.args[0]->kind == ExprKind::kConst;
  const Expr& constant = *e.args[constant_first ? 0 : 1];
  const Expr& other = *e.args[constant_first ? 1 : 0];
  if (constant.kind != ExprKind::kConst || other.kind == ExprKind::kConst) return;
  auto plan = std::make_unique<ConstantComparison>();
  plan->relation = relation;
  plan->constant_first = constant_first;
  if (IsConst(constant, Kind::kInt) && IsMethodWithConstant(other, "compareTo")) {
    plan->form = ComparisonForm::kCompareTo;
    plan->against = constant.value.int_value();
    plan->operand = other.target.get();
    plan->constant = &other.args[0]->value;
  } else if ((IsConst(constant, Kind::kString) || IsConst(constant, Kind::kInt) ||
              IsConst(constant, Kind::kUint)) &&
             IsCheap(other)) {
    plan->operand = &other;
    plan->constant = &constant.value;
  } else {
    return;
  }
  e.comparison = std::move(plan);
}

bool IsLogical(const Expr& e, Op op) {
  return e.kind == ExprKind::kCall && e.op == op && e.args.size() == 2;
}

// The operands under the && (||) nodes reachable from `e`, left to right.
void CollectOperands(const Expr& e, Op op, LogicalChain* chain) {
  if (!IsLogical(e, op)) {
    chain->operands.push_back(&e);
    return;
  }
  ++chain->operators;
  CollectOperands(*e.args[0], op, chain);
  CollectOperands(*e.args[1], op, chain);
}

void PlanChain(Expr& e) {
  auto chain = std::make_unique<LogicalChain>();
  CollectOperands(e, e.op, chain.get());
  e.chain = std::move(chain);
}

// `chained`: the parent extends `e`'s attribute chain, so the path belongs
// on the parent. `parent_op`: the parent's operator (a chain of && or ||
// is planned at its top).
void PlanNode(Expr& e, bool chained, Op parent_op, std::vector<AttributePath*>* paths) {
  const Expr* operand = nullptr;
  const std::string* key = nullptr;
  const bool link = ChainLink(e, &operand, &key);
  if (e.target) PlanNode(*e.target, link && e.target.get() == operand, e.op, paths);
  for (ExprPtr& arg : e.args) PlanNode(*arg, link && arg.get() == operand, e.op, paths);
  if (link && !chained) {
    auto path = std::make_unique<AttributePath>();
    if (CollectChain(e, path.get())) {
      paths->push_back(path.get());
      e.path = std::move(path);
    }
  }
  if (e.kind == ExprKind::kCall) PlanComparison(e);
  if ((IsLogical(e, Op::kAnd) || IsLogical(e, Op::kOr)) && parent_op != e.op) PlanChain(e);
}

// The chain's first `steps` links as one string: the variable, then each
// key after a NUL (keys are text, a NUL cannot end one early).
std::string PrefixKey(const AttributePath& path, size_t steps) {
  std::string key = std::to_string(path.variable);
  for (size_t i = 0; i < steps; ++i) {
    key += '\0';
    key += path.steps[i].key;
  }
  return key;
}

// Gives every prefix that two or more chains share a memo slot; each chain
// remembers its longest shared one. Chains from a comprehension's variable
// are left alone: its value changes from one iteration to the next.
int AssignMemos(const std::vector<AttributePath*>& paths) {
  absl::flat_hash_map<std::string, int> uses;
  for (const AttributePath* path : paths) {
    if (path->variable < 0) continue;
    for (size_t n = 1; n <= path->steps.size(); ++n) ++uses[PrefixKey(*path, n)];
  }
  absl::flat_hash_map<std::string, int> slots;
  for (AttributePath* path : paths) {
    if (path->variable < 0) continue;
    for (size_t n = path->steps.size(); n >= 1; --n) {
      std::string key = PrefixKey(*path, n);
      if (uses[key] < 2) continue;
      auto [it, added] = slots.try_emplace(key, static_cast<int>(slots.size()));
      path->memo = it->second;
      path->memo_steps = n;
      break;
    }
  }
  return static_cast<int>(slots.size());
}

}  // namespace

int PlanFastPaths(Expr& root) {
  std::vector<AttributePath*> paths;
  PlanNode(root, false, Op::kNone, &paths);
  return AssignMemos(paths);
}

}  // namespace canhazgpu::cel::internal
