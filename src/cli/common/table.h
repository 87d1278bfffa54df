// Plain-text tables for terminal output, in canhazgpu's light style: a
// header, a rule of ─ and ┼, and cells separated by " │ ". Widths follow the
// cells' display width (UTF-8 code points), so colour escapes and box
// characters do not skew columns. A cell's text is shown with
// EscapeForDisplay (core/strings.h): cells carry other users' notes and
// commands, and no byte of them may reach the terminal as a control or break
// the row; colour comes only from a cell's Style. Not thread-safe.
#pragma once

#include <string>
#include <vector>

namespace canhazgpu::cli {

// ANSI styles; empty strings when colour is off.
struct Style {
  std::string start;
  std::string end;
};

struct Cell {
  std::string text;  // any bytes; escaped when the row is added
  Style style;
};

class Table {
 public:
  explicit Table(std::vector<std::string> headers, Style header_style = {})
      : headers_(std::move(headers)), header_style_(std::move(header_style)) {}
  void AddRow(std::vector<Cell> row);
  // Cells of `column` wider than `width` (at least 2) are cut to fit, their
  // last character an ellipsis "…". Headers are never cut.
  void SetMaxWidth(size_t column, size_t width);
  // Cuts the last column (as SetMaxWidth) so that no line is wider than
  // `width`, but not below `min_last` columns: a long message stays one
  // readable line; the other columns are never cut.
  void FitLastColumn(size_t width, size_t min_last = 20);
  std::string Render() const;
  // The display width of Render()'s widest line.
  size_t Width() const;

 private:
  std::vector<size_t> ColumnWidths() const;
  std::vector<std::string> headers_;
  Style header_style_;
  std::vector<size_t> max_widths_;  // 0: no limit
  std::vector<std::vector<Cell>> rows_;
};

// Code points, not counting SGR colour sequences (ESC [ ... m).
size_t DisplayWidth(const std::string& text);

// Colour for stdout: on only for a terminal, with NO_COLOR unset or empty,
// TERM not "dumb", and no --no-color.
bool ColorEnabled(bool no_color_flag);

Style MakeStyle(bool enabled, const char* sgr);  // sgr like "1;32"

}  // namespace canhazgpu::cli
