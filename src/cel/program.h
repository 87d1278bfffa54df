// Compile once, evaluate many times. An Env holds declarations and options
// (plain CEL, or the Kubernetes DRA selector environment); Compile parses,
// resolves names, type-checks and folds constants; a Program evaluates
// against an activation (one value per declared variable, in declaration
// order) under a cost limit, and never throws: failures are error values.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "cel/ast.h"
#include "cel/functions.h"
#include "cel/parser.h"
#include "cel/types.h"
#include "cel/value.h"

namespace canhazgpu::cel {

struct EnvOptions {
  bool type_check = true;
  // Kubernetes compile settings: cel.HomogeneousAggregateLiterals, constant
  // regex patterns validated at compile time.
  bool kubernetes = false;
  // DRA selector: the result must be bool or the attribute type.
  bool dra_selector = false;
  std::string container;  // namespace for name resolution
  int64_t cost_limit = kDefaultCostLimit;
  // The planner's direct paths for attribute chains, comparisons with
  // constants and && / || chains (planner.cc). Off, every node takes the
  // general path: the same results, slower; tests compare the two.
  bool plan = true;
  size_t max_source_length = 10 * 1024;  // CELSelectorExpressionMaxLength
  ParseOptions parse;
};

class Program;

class Env {
 public:
  explicit Env(EnvOptions options = {}) : options_(std::move(options)) {}

  // The environment the scheduler compiles DRA device selectors in: one
  // variable `device` of type kubernetes.DRADevice.
  static Env DraSelector();

  // Declares a variable; returns its activation slot.
  int Declare(std::string name, Type type);
  int Find(std::string_view name) const;
  const EnvOptions& options() const { return options_; }
  const std::vector<std::pair<std::string, Type>>& declarations() const { return declarations_; }

  // Errors are InvalidArgument with "LINE:COLUMN: message".
  absl::StatusOr<Program> Compile(std::string_view source) const;

 private:
  EnvOptions options_;
  std::vector<std::pair<std::string, Type>> declarations_;
};

class Program {
 public:
  // `variables` holds one value per declared variable.
  Value Evaluate(const Value* variables) const;
  Value Evaluate(const std::vector<Value>& variables) const { return Evaluate(variables.data()); }
  // Like Evaluate, also reporting the cost spent.
  Value Evaluate(const Value* variables, int64_t* cost) const;

  const Type& result_type() const { return root_->type; }
  const std::string& source() const { return *source_; }
  // "LINE:COLUMN: message" for an error value from Evaluate.
  std::string DescribeError(const Value& error) const;

 private:
  friend class Env;
  std::shared_ptr<const std::string> source_;
  std::shared_ptr<const Expr> root_;
  int locals_ = 0;
  int memos_ = 0;
  int64_t cost_limit_ = kDefaultCostLimit;
};

// Internals shared by the compile stages (checker.cc, evaluator.cc).
namespace internal {

struct CompileResult {
  int locals = 0;
};

// Resolves identifiers (locals, declared variables with container and
// longest-prefix rules, type names) and functions; with type_check also
// computes every node's type. Errors carry the node offset.
absl::Status ResolveAndCheck(Expr& root, const Env& env, CompileResult* result, std::string* error,
                             int32_t* error_offset);

// Marks attribute chains and relations with constants for the evaluator's
// direct paths (planner.cc). Run after constant folding. Returns the number
// of memo slots an evaluation needs for chain prefixes used more than once.
int PlanFastPaths(Expr& root);

// `locals` and `memos`: the slots the checker and the planner asked for.
Value EvaluateExpr(const Expr& root, const Value* variables, int locals, int memos,
                   EvalContext& ctx);

// Fields of kubernetes.DRADevice.
const Type* DeviceFieldType(std::string_view field);

}  // namespace internal

}  // namespace canhazgpu::cel
