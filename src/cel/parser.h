// CEL source text to an Expr tree (cel-spec doc/langdef.md grammar). Errors
// are InvalidArgument statuses in FormatError's form.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cel/ast.h"

namespace canhazgpu::cel {

struct ParseOptions {
  bool enable_macros = true;
  // Nesting of parentheses, calls and literals, and the height of the tree
  // (a.b.c and x[0][0] are as deep as they are long; a chain of && or || is
  // balanced). cel-spec requires at least 12 nested and 32 repeated levels;
  // cel-go's default limit is 250.
  int max_depth = 250;
  // Backtick field names (m.`content-type`): newer cel-spec syntax.
  bool quoted_field_selection = true;
};

absl::StatusOr<ExprPtr> Parse(std::string_view source, const ParseOptions& options = {});

// "LINE:COLUMN" (1-based, columns in code points) of a byte offset.
std::string FormatLocation(std::string_view source, int32_t offset);

// A one-line quote of about `width` bytes of `source` around byte `offset`:
// "..." where it is cut; newlines, other control characters and bytes that
// are not UTF-8 escaped (\n, \x1b). Messages quote this, never the whole
// source, which may be 10 KiB long.
std::string Excerpt(std::string_view source, int32_t offset, size_t width = 60);

// A message's own text (which may name an identifier or a value of any
// length) escaped as Excerpt does and cut to about 200 bytes.
std::string BoundedMessage(std::string_view message);

// "LINE:COLUMN: message (near 'excerpt')": a compile error.
std::string FormatError(std::string_view source, int32_t offset, std::string_view message);

}  // namespace canhazgpu::cel
