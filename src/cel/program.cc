#include "cel/program.h"

#include "core/strings.h"

namespace canhazgpu::cel {
namespace {

// Replaces calls whose arguments are all constants by their value
// (quantity("40Gi") is parsed once, not per device). Calls that fail are
// left alone so the error still happens - and can be absorbed - at run time.
void FoldConstants(Expr& e) {
  if (e.target) FoldConstants(*e.target);
  for (ExprPtr& arg : e.args) FoldConstants(*arg);
  if (e.kind != ExprKind::kCall || e.function == nullptr) return;
  if (e.target && e.target->kind != ExprKind::kConst) return;
  for (const ExprPtr& arg : e.args) {
    if (arg->kind != ExprKind::kConst) return;
  }
  std::vector<Value> args;
  if (e.target) args.push_back(e.target->value);
  for (const ExprPtr& arg : e.args) args.push_back(arg->value);
  EvalContext ctx;
  ctx.regex = e.regex.get();
  std::vector<const Value*> pointers;
  for (const Value& arg : args) pointers.push_back(&arg);
  Value v = Dispatch(*e.function, pointers.data(), pointers.size(), ctx);
  if (v.is_error() || v.kind() == Kind::kList || v.kind() == Kind::kMap) return;
  e.kind = ExprKind::kConst;
  e.value = std::move(v);
  e.target.reset();
  e.args.clear();
  e.function = nullptr;
  e.regex.reset();
}

}  // namespace

Env Env::DraSelector() {
  EnvOptions options;
  options.kubernetes = true;
  options.dra_selector = true;
  Env env(options);
  env.Declare("device", Type::Object("kubernetes.DRADevice"));
  return env;
}

int Env::Declare(std::string name, Type type) {
  declarations_.emplace_back(std::move(name), std::move(type));
  return static_cast<int>(declarations_.size()) - 1;
}

int Env::Find(std::string_view name) const {
  for (size_t i = 0; i < declarations_.size(); ++i) {
    if (declarations_[i].first == name) return static_cast<int>(i);
  }
  return -1;
}

absl::StatusOr<Program> Env::Compile(std::string_view source) const {
  if (source.size() > options_.max_source_length) {
    return absl::InvalidArgumentError(StrCat("1:1: expression is ", source.size(),
                                             " bytes long, more than the limit of ",
                                             options_.max_source_length));
  }
  auto parsed = Parse(source, options_.parse);
  if (!parsed.ok()) return parsed.status();
  ExprPtr root = *std::move(parsed);
  internal::CompileResult compiled;
  std::string error;
  int32_t offset = 0;
  if (!internal::ResolveAndCheck(*root, *this, &compiled, &error, &offset).ok()) {
    return absl::InvalidArgumentError(FormatError(source, offset, error));
  }
  if (options_.dra_selector && options_.type_check) {
    const Type& t = root->type;
    if (t.kind() != Type::Kind::kBool && t.kind() != Type::Kind::kAny) {
      return absl::InvalidArgumentError(FormatError(
          source, 0, StrCat("must evaluate to bool or the unknown type, not ", t.ToString())));
    }
  }
  FoldConstants(*root);
  const int memos = options_.plan ? internal::PlanFastPaths(*root) : 0;
  Program program;
  program.source_ = std::make_shared<const std::string>(source);
  program.root_ = std::move(root);
  program.locals_ = compiled.locals;
  program.memos_ = memos;
  program.cost_limit_ = options_.cost_limit;
  return program;
}

Value Program::Evaluate(const Value* variables) const {
  int64_t cost;
  return Evaluate(variables, &cost);
}

Value Program::Evaluate(const Value* variables, int64_t* cost) const {
  EvalContext ctx;
  ctx.cost_limit = cost_limit_;
  Value v = internal::EvaluateExpr(*root_, variables, locals_, memos_, ctx);
  *cost = ctx.cost;
  return v;
}

std::string Program::DescribeError(const Value& error) const {
  const ErrorData& data = error.error();
  if (data.offset < 0) return BoundedMessage(data.message);
  return StrCat(FormatLocation(*source_, data.offset), ": ", BoundedMessage(data.message));
}

}  // namespace canhazgpu::cel
