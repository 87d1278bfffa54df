#include "cli/common/table.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "core/strings.h"

namespace canhazgpu::cli {

size_t DisplayWidth(const std::string& text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\033' && i + 1 < text.size() && text[i + 1] == '[') {
      size_t end = text.find('m', i);
      if (end != std::string::npos) {
        i = end;
        continue;
      }
    }
    width += (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;  // count UTF-8 lead bytes
  }
  return width;
}

void Table::AddRow(std::vector<Cell> row) {
  for (Cell& cell : row) cell.text = EscapeForDisplay(cell.text);
  rows_.push_back(std::move(row));
}

void Table::SetMaxWidth(size_t column, size_t width) {
  if (max_widths_.size() <= column) max_widths_.resize(column + 1, 0);
  max_widths_[column] = std::max<size_t>(width, 2);
}

namespace {

// `text` cut to `width` display columns, "…" last; colour sequences are
// not expected here (a cell's colour is its Style).
std::string Fit(const std::string& text, size_t width) {
  if (width == 0 || DisplayWidth(text) <= width) return text;
  std::string out;
  size_t shown = 0;
  for (size_t i = 0; i < text.size() && shown + 1 < width;) {
    size_t len = 1;
    while (i + len < text.size() && (static_cast<unsigned char>(text[i + len]) & 0xC0) == 0x80) {
      ++len;
    }
    out.append(text, i, len);
    i += len;
    ++shown;
  }
  return out + "…";
}

}  // namespace

std::vector<size_t> Table::ColumnWidths() const {
  std::vector<size_t> widths;
  for (const std::string& h : headers_) widths.push_back(DisplayWidth(h));
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      size_t w = DisplayWidth(row[i].text);
      if (i < max_widths_.size() && max_widths_[i] > 0) w = std::min(w, max_widths_[i]);
      widths[i] = std::max(widths[i], w);
    }
  }
  return widths;
}

void Table::FitLastColumn(size_t width, size_t min_last) {
  if (headers_.empty()) return;
  const size_t last = headers_.size() - 1;
  std::vector<size_t> widths = ColumnWidths();
  const size_t total = Width();
  if (total <= width) return;
  const size_t over = total - width;
  SetMaxWidth(last, std::max(min_last, widths[last] > over ? widths[last] - over : 0));
}

size_t Table::Width() const {
  const std::vector<size_t> widths = ColumnWidths();
  size_t total = widths.empty() ? 0 : 3 * (widths.size() - 1);
  for (size_t w : widths) total += w;
  // The last column is not padded: the widest line is as wide as the rule.
  return total;
}

std::string Table::Render() const {
  const std::vector<size_t> widths = ColumnWidths();
  auto pad = [](const std::string& s, size_t width) {
    return s + std::string(width - std::min(width, DisplayWidth(s)), ' ');
  };
  std::string out;
  auto emit_row = [&](const std::vector<Cell>& cells) {
    std::string line;
    for (size_t i = 0; i < widths.size(); ++i) {
      if (i > 0) line += " │ ";
      const Cell empty;
      const Cell& cell = i < cells.size() ? cells[i] : empty;
      const std::string fitted = Fit(cell.text, widths[i]);
      // The last column is not padded, so lines carry no trailing blanks.
      std::string text = i + 1 == widths.size() ? fitted : pad(fitted, widths[i]);
      line += cell.style.start + text + cell.style.end;
    }
    out += line + "\n";
  };
  std::vector<Cell> header;
  for (const std::string& h : headers_) header.push_back({h, header_style_});
  emit_row(header);
  for (size_t i = 0; i < widths.size(); ++i) {
    if (i > 0) out += "─┼─";
    for (size_t k = 0; k < widths[i]; ++k) out += "─";
  }
  out += "\n";
  for (const auto& row : rows_) emit_row(row);
  return out;
}

bool ColorEnabled(bool no_color_flag) {
  if (no_color_flag || !isatty(STDOUT_FILENO)) return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::string_view(term) != "dumb";
}

Style MakeStyle(bool enabled, const char* sgr) {
  if (!enabled) return {};
  return {StrCat("\033[", sgr, "m"), "\033[0m"};
}

}  // namespace canhazgpu::cli
