// CEL source text to an Expr tree (cel-spec doc/langdef.md grammar). Errors
// are InvalidArgument statuses whose message starts with "LINE:COLUMN: ".
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cel/ast.h"

namespace canhazgpu::cel {

struct ParseOptions {
  bool enable_macros = true;
  // Nesting of parentheses, calls, selects and literals; cel-spec requires
  // at least 12, cel-go's default limit is 250.
  int max_depth = 200;
  // Backtick field names (m.`content-type`): newer cel-spec syntax.
  bool quoted_field_selection = true;
};

absl::StatusOr<ExprPtr> Parse(std::string_view source, const ParseOptions& options = {});

// "LINE:COLUMN" (1-based, columns in code points) of a byte offset.
std::string FormatLocation(std::string_view source, int32_t offset);

}  // namespace canhazgpu::cel
