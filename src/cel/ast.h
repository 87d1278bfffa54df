// The parsed form of a CEL expression. Operators are calls with cel-go's
// operator names ("_+_", "_&&_", "@in", ...); macros (has, all, exists, map,
// filter, cel.bind, the two-variable forms) are expanded by the parser into
// kComprehension / test-only kSelect nodes. The checker and the planner
// annotate nodes in place (type, resolved variable, function overloads).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cel/types.h"
#include "cel/value.h"

namespace re2 {
class RE2;
}

namespace canhazgpu::cel {

struct Expr;
struct FunctionGroup;

// Where the last lookup through this node found its map entry or overload.
// Maps built by one function (a DRA device's attributes) keep their keys in
// the same order, and a call sees the same kinds again, so the guess is
// nearly always right and saves a scan. Relaxed atomics: a Program may be
// evaluated from several threads, and any value is only a guess.
class Hint {
 public:
  Hint() = default;
  Hint(const Hint& other) : value_(other.get()) {}
  Hint& operator=(const Hint& other) {
    set(other.get());
    return *this;
  }
  int32_t get() const { return value_.load(std::memory_order_relaxed); }
  void set(int32_t v) const { value_.store(v, std::memory_order_relaxed); }

 private:
  mutable std::atomic<int32_t> value_{-1};
};

// A chain of field selections and constant string indexes from a variable
// (`device.attributes["gpu.canhazgpu.dev"].productName`), walked in one loop
// instead of a recursion per node, as cel-go's planner turns such chains into
// one attribute with qualifiers. Set by the planner on the outermost node.
struct AttributePath {
  struct Step {
    std::string key;
    const void* interned = nullptr;  // Value::InternedKey(key): matched by address
    Hint hint;                       // entry position of `key` in the map last seen at this step
  };
  int32_t variable = -1;  // as Expr::variable
  std::vector<Step> steps;
  // Where a prefix of this chain is shared with others in the expression
  // (`device.attributes["gpu.canhazgpu.dev"]` in a conjunction): the value
  // after the first `memo_steps` steps is kept in the evaluation's memo slot
  // `memo`, so the first chain through it walks and the others start there.
  int32_t memo = -1;
  size_t memo_steps = 0;
};

// A relation between a cheap expression and a constant (`x == "A100"`,
// `x >= 2`), between the result of `x.compareTo(constant)` and a constant
// integer (`...memory.compareTo(quantity("40Gi")) >= 0`), or the ordering
// methods themselves (`...memory.isGreaterThan(quantity("1Mi"))`). The evaluator
// computes it directly when the value has the constant's kind and takes the
// general path (dispatch, errors) otherwise. Set by the planner.
enum class Relation : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
enum class ComparisonForm : uint8_t {
  kValue,        // `x OP C`
  kCompareTo,    // `x.compareTo(C) OP against`
  kOrderMethod,  // `x.isGreaterThan(C)` (relation kGt) or `x.isLessThan(C)` (kLt)
};
struct ConstantComparison {
  ComparisonForm form = ComparisonForm::kValue;
  Relation relation = Relation::kEq;
  const Expr* operand = nullptr;    // the non-constant side (the method's receiver)
  const Value* constant = nullptr;  // the constant side (the method's argument)
  bool constant_first = false;      // `"A100" == x`: the relation reads right to left
  int64_t against = 0;              // kCompareTo: the integer compareTo's result is related to
};

// The operands of a chain of && (or of ||) in source order, set by the
// planner on the chain's top node (every && and || belongs to one): the
// evaluator runs them in one loop rather than one recursion per operator.
struct LogicalChain {
  std::vector<const Expr*> operands;
  int64_t operators = 0;  // the && (||) nodes folded into the chain
};

enum class ExprKind : uint8_t { kConst, kIdent, kSelect, kCall, kList, kMap, kComprehension };

// Calls the evaluator treats specially, resolved once from the name.
enum class Op : uint8_t { kNone, kAnd, kOr, kConditional, kIndex };

enum class Macro : uint8_t {
  kAll,
  kExists,
  kExistsOne,
  kMap,        // range.map(x, t)
  kMapFilter,  // range.map(x, p, t)
  kFilter,
  kTransformList,      // (i, v, t) and (i, v, p, t)
  kTransformMap,       // (k, v, t) and (k, v, p, t)
  kTransformMapEntry,  // (k, v, entry) and (k, v, p, entry)
  kBind,               // cel.bind(x, init, body): args = {init, body}
  kOptMap,             // opt.optMap(x, t)
  kOptFlatMap,         // opt.optFlatMap(x, t)
};

struct Expr {
  Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  ~Expr();  // without recursion (parser.cc)

  ExprKind kind = ExprKind::kConst;
  int32_t offset = 0;  // byte offset of the node in the source

  Value value;             // kConst
  std::string name;        // kIdent name, kSelect field, kCall function, first iteration variable
  std::string name2;       // second iteration variable ("" for one-variable macros)
  bool test_only = false;  // has(a.f)
  bool optional = false;   // a.?f
  bool root = false;       // .name: resolved from the root, ignoring the container
  Macro macro = Macro::kAll;
  Op op = Op::kNone;  // kCall

  std::unique_ptr<Expr> target;  // select operand, call receiver, comprehension range
  // Call arguments, list elements, map keys and values interleaved, or the
  // comprehension's predicate/transform expressions.
  std::vector<std::unique_ptr<Expr>> args;
  std::vector<bool> optional_entries;  // [?x], {?k: v}

  // Filled in by the checker and the planner.
  Type type = Type::Dyn();
  int32_t variable = -1;  // kIdent: activation slot (>= 0) or local slot (< -1: -2 - index)
  const FunctionGroup* function = nullptr;  // kCall
  int overload = -1;                        // statically chosen overload, -1 = by runtime kinds
  std::shared_ptr<const re2::RE2> regex;    // constant pattern of matches()/find()/findAll()
  Hint hint;  // kSelect / constant-key index: entry position; kCall: overload
  std::unique_ptr<const AttributePath> path;             // the outermost node of a chain
  std::unique_ptr<const ConstantComparison> comparison;  // kCall
  std::unique_ptr<const LogicalChain> chain;             // kCall, Op::kAnd / Op::kOr
};

using ExprPtr = std::unique_ptr<Expr>;

}  // namespace canhazgpu::cel
