// The cel-go strings extension at version 2 (what Kubernetes enables since
// 1.29): charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace,
// split, substring, trim, join, strings.quote, and format (format.cc).
// Indexes count code points.
#include "core/strings.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "cel/functions.h"

namespace canhazgpu::cel {
namespace {

Value OutOfRange(int64_t i) { return Value::Error(StrCat("index out of range: ", i)); }

Value CharAt(const Value* const* a, size_t, EvalContext&) {
  std::u32string s = DecodeUtf8((*a[0]).str());
  int64_t i = (*a[1]).int_value();
  if (i < 0 || i > static_cast<int64_t>(s.size())) return OutOfRange(i);
  if (i == static_cast<int64_t>(s.size())) return Value::String("");
  return Value::String(EncodeUtf8(s.substr(i, 1)));
}

// cel-go v0.26 (Kubernetes 1.34-1.36): an empty needle is found at the
// offset whatever it is, a negative offset is an error and one at or past
// the end finds nothing.
Value IndexOfImpl(std::string_view str, std::string_view sub, int64_t offset) {
  if (sub.empty()) return Value::Int(offset);
  std::u32string s = DecodeUtf8(str), t = DecodeUtf8(sub);
  if (offset < 0) return OutOfRange(offset);
  if (offset >= static_cast<int64_t>(s.size()) || s.size() < t.size()) return Value::Int(-1);
  size_t found = s.find(t, offset);
  return Value::Int(found == std::u32string::npos ? -1 : static_cast<int64_t>(found));
}

Value IndexOf(const Value* const* a, size_t n, EvalContext&) {
  return IndexOfImpl((*a[0]).str(), (*a[1]).str(), n == 3 ? (*a[2]).int_value() : 0);
}

// The offset is the last start position considered; the same edge cases
// as IndexOfImpl.
Value LastIndexOfImpl(std::string_view str, std::string_view sub, int64_t offset) {
  if (sub.empty()) return Value::Int(offset);
  std::u32string s = DecodeUtf8(str), t = DecodeUtf8(sub);
  if (offset < 0) return OutOfRange(offset);
  if (offset >= static_cast<int64_t>(s.size()) || s.size() < t.size()) return Value::Int(-1);
  int64_t start = std::min<int64_t>(offset, static_cast<int64_t>(s.size() - t.size()));
  for (int64_t i = start; i >= 0; --i) {
    if (s.compare(i, t.size(), t) == 0) return Value::Int(i);
  }
  return Value::Int(-1);
}

Value LastIndexOf(const Value* const* a, size_t n, EvalContext&) {
  if (n == 3) return LastIndexOfImpl((*a[0]).str(), (*a[1]).str(), (*a[2]).int_value());
  // Without an offset an empty needle is found at the end: the length in
  // code points.
  int64_t size = static_cast<int64_t>(CodePointCount((*a[0]).str()));
  if ((*a[1]).str().empty()) return Value::Int(size);
  if ((*a[0]).str().size() < (*a[1]).str().size()) return Value::Int(-1);
  return LastIndexOfImpl((*a[0]).str(), (*a[1]).str(), size - 1);
}

Value LowerAscii(const Value* const* a, size_t, EvalContext&) {
  return Value::String(absl::AsciiStrToLower((*a[0]).str()));
}
Value UpperAscii(const Value* const* a, size_t, EvalContext&) {
  return Value::String(absl::AsciiStrToUpper((*a[0]).str()));
}

// Go's strings.Replace (an empty `from` inserts between code points).
Value Replace(const Value* const* a, size_t n, EvalContext& ctx) {
  const std::string &s = (*a[0]).str(), &from = (*a[1]).str(), &to = (*a[2]).str();
  int64_t limit = n == 4 ? (*a[3]).int_value() : -1;
  // The result's length, charged before it is built: an empty `from` with
  // a long `to` would otherwise make length(s) * length(to) bytes.
  int64_t count = 0;
  if (from.empty()) {
    count = static_cast<int64_t>(CodePointCount(s)) + 1;
  } else {
    for (size_t at = s.find(from); at != std::string::npos && (limit < 0 || count < limit);
         at = s.find(from, at + from.size())) {
      ++count;
    }
  }
  if (limit >= 0) count = std::min(count, limit);
  if (!ctx.Charge(count * static_cast<int64_t>(to.size() / 10 + 1))) return CostLimitExceeded();
  std::string out;
  int64_t done = 0;
  size_t pos = 0;
  if (from.empty()) {
    std::u32string cps = DecodeUtf8(s);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (limit < 0 || done < limit) out += to, ++done;
      if (i < cps.size()) out += EncodeUtf8(cps.substr(i, 1));
    }
  } else {
    while (limit < 0 || done < limit) {
      size_t found = s.find(from, pos);
      if (found == std::string::npos) break;
      out.append(s, pos, found - pos);
      out += to;
      pos = found + from.size();
      ++done;
    }
    out.append(s, pos, std::string::npos);
  }
  return Value::String(std::move(out));
}

// Go's strings.SplitN.
Value Split(const Value* const* a, size_t n, EvalContext& ctx) {
  const std::string &s = (*a[0]).str(), &sep = (*a[1]).str();
  int64_t limit = n == 3 ? (*a[2]).int_value() : -1;
  ValueList parts;
  if (limit == 0) return Value::List({});
  if (sep.empty()) {
    std::u32string cps = DecodeUtf8(s);
    for (size_t i = 0; i < cps.size(); ++i) {
      if (limit > 0 && static_cast<int64_t>(parts.size()) == limit - 1) {
        parts.push_back(Value::String(EncodeUtf8(cps.substr(i))));
        break;
      }
      parts.push_back(Value::String(EncodeUtf8(cps.substr(i, 1))));
    }
  } else {
    size_t pos = 0;
    while (limit < 0 || static_cast<int64_t>(parts.size()) < limit - 1) {
      size_t found = s.find(sep, pos);
      if (found == std::string::npos) break;
      parts.push_back(Value::String(s.substr(pos, found - pos)));
      pos = found + sep.size();
    }
    parts.push_back(Value::String(s.substr(pos)));
  }
  if (!ctx.Charge(static_cast<int64_t>(parts.size()))) return CostLimitExceeded();
  return Value::List(std::move(parts));
}

Value Substring(const Value* const* a, size_t n, EvalContext&) {
  std::u32string s = DecodeUtf8((*a[0]).str());
  int64_t size = static_cast<int64_t>(s.size());
  int64_t start = (*a[1]).int_value();
  int64_t end = n == 3 ? (*a[2]).int_value() : size;
  if (start < 0 || start > size) return OutOfRange(start);
  if (end < 0 || end > size) return OutOfRange(end);
  if (start > end)
    return Value::Error(StrCat("invalid substring range. start: ", start, ", end: ", end));
  return Value::String(EncodeUtf8(s.substr(start, end - start)));
}

bool IsUnicodeSpace(char32_t c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

Value Trim(const Value* const* a, size_t, EvalContext&) {
  std::u32string s = DecodeUtf8((*a[0]).str());
  size_t begin = 0, end = s.size();
  while (begin < end && IsUnicodeSpace(s[begin])) ++begin;
  while (end > begin && IsUnicodeSpace(s[end - 1])) --end;
  return Value::String(EncodeUtf8(s.substr(begin, end - begin)));
}

Value Join(const Value* const* a, size_t n, EvalContext& ctx) {
  std::string out;
  std::string_view sep = n == 2 ? std::string_view((*a[1]).str()) : std::string_view();
  size_t length = 0;  // charged before the result is built
  for (const Value& item : (*a[0]).list()) {
    if (item.kind() != Kind::kString) return Value::Error("join: list elements must be strings");
    length += item.str().size() + sep.size();
  }
  if (!ctx.Charge(static_cast<int64_t>((*a[0]).list().size() + length / 10)))
    return CostLimitExceeded();
  bool first = true;
  for (const Value& item : (*a[0]).list()) {
    if (!first) out += sep;
    out += item.str();
    first = false;
  }
  return Value::String(std::move(out));
}

Value Quote(const Value* const* a, size_t, EvalContext&) {
  std::string out = "\"";
  const std::string& s = (*a[0]).str();
  std::string valid = IsValidUtf8(s) ? s : EncodeUtf8(DecodeUtf8(s));
  for (char c : valid) {
    switch (c) {
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        out.push_back(c);
    }
  }
  out += "\"";
  return Value::String(std::move(out));
}

}  // namespace

void RegisterStrings(FunctionRegistry& r) {
  r.Add("<string>.charAt(int) -> string", CharAt);
  r.Add("<string>.indexOf(string) -> int", IndexOf);
  r.Add("<string>.indexOf(string, int) -> int", IndexOf);
  r.Add("<string>.lastIndexOf(string) -> int", LastIndexOf);
  r.Add("<string>.lastIndexOf(string, int) -> int", LastIndexOf);
  r.Add("<string>.lowerAscii() -> string", LowerAscii);
  r.Add("<string>.upperAscii() -> string", UpperAscii);
  r.Add("<string>.replace(string, string) -> string", Replace);
  r.Add("<string>.replace(string, string, int) -> string", Replace);
  r.Add("<string>.split(string) -> list(string)", Split);
  r.Add("<string>.split(string, int) -> list(string)", Split);
  r.Add("<string>.substring(int) -> string", Substring);
  r.Add("<string>.substring(int, int) -> string", Substring);
  r.Add("<string>.trim() -> string", Trim);
  r.Add("<list(string)>.join() -> string", Join);
  r.Add("<list(string)>.join(string) -> string", Join);
  r.Add("strings.quote(string) -> string", Quote);
  RegisterFormat(r);
}

}  // namespace canhazgpu::cel
