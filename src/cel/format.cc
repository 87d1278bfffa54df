// string.format from the cel-go strings extension at version 2 (what
// Kubernetes 1.29 and later enable): cel-go v0.26's formatter (ext/
// formatting.go), not the newer cel-spec one of strings version 4. Its
// quirks are kept on purpose, as selectors written against Kubernetes see
// them: %f and %e print as golang.org/x/text does for en_US (digit
// grouping, "∞", "1.0 × 10⁰⁰"), %e ignores the precision and takes it as a
// minimum width instead, and lists and maps print their elements as CEL
// literals. One difference: a precision over 1000 is an error (newer
// cel-go's cap) rather than a string of that many digits.
#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "cel/functions.h"
#include "core/strings.h"

namespace canhazgpu::cel {
namespace {

constexpr int kDefaultPrecision = 6;
constexpr int kMaxPrecision = 1000;

// The static type kind of a run-time value, for FormatVerbAccepts.
Type::Kind TypeKindOf(const Value& v) {
  switch (v.kind()) {
    case Kind::kNull:
      return Type::Kind::kNull;
    case Kind::kBool:
      return Type::Kind::kBool;
    case Kind::kInt:
      return Type::Kind::kInt;
    case Kind::kUint:
      return Type::Kind::kUint;
    case Kind::kDouble:
      return Type::Kind::kDouble;
    case Kind::kString:
      return Type::Kind::kString;
    case Kind::kBytes:
      return Type::Kind::kBytes;
    case Kind::kList:
      return Type::Kind::kList;
    case Kind::kMap:
      return Type::Kind::kMap;
    case Kind::kType:
      return Type::Kind::kType;
    case Kind::kDuration:
      return Type::Kind::kDuration;
    case Kind::kTimestamp:
      return Type::Kind::kTimestamp;
    case Kind::kOptional:
      return Type::Kind::kOptional;
    case Kind::kQuantity:
      return Type::Kind::kQuantity;
    case Kind::kSemver:
      return Type::Kind::kSemver;
    case Kind::kError:
      break;
  }
  return Type::Kind::kObject;
}

// Replaces the text of `out`. Appending to a cleared string rather than
// assigning a literal keeps GCC 12 -O3 from a false -Wrestrict in
// libstdc++'s replace.
void SetText(std::string* out, std::string_view text) {
  out->clear();
  out->append(text);
}

void AppendUtf8(std::string& out, char32_t c) { out += EncodeUtf8(std::u32string_view(&c, 1)); }

// Go's unicode.IsPrint, close enough for what a selector prints: controls,
// separators other than ' ', format characters and private use are not.
bool IsGoPrintable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return false;
  if ((c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF) return false;
  if ((c >= 0xE000 && c <= 0xF8FF) || (c >= 0xFFF9 && c <= 0xFFFB) || c >= 0xF0000) return false;
  return c != 0xFFFE && c != 0xFFFF;
}

// Go's %q of a (valid UTF-8) string: strconv.Quote.
std::string GoQuote(std::string_view s) {
  std::string out(1, '"');
  for (char32_t c : DecodeUtf8(s)) {
    switch (c) {
      case '\a':
        out += "\\a";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\v':
        out += "\\v";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '"':
        out += "\\\"";
        continue;
      default:
        break;
    }
    if (IsGoPrintable(c)) {
      AppendUtf8(out, c);
    } else if (c < 0x80) {
      out += absl::StrFormat("\\x%02x", static_cast<uint32_t>(c));
    } else if (c < 0x10000) {
      out += absl::StrFormat("\\u%04x", static_cast<uint32_t>(c));
    } else {
      out += absl::StrFormat("\\U%08x", static_cast<uint32_t>(c));
    }
  }
  out += "\"";
  return out;
}

std::string UnsignedInBase(uint64_t u, char verb) {
  switch (verb) {
    case 'o':
      return absl::StrFormat("%o", u);
    case 'x':
      return absl::StrFormat("%x", u);
    case 'X':
      return absl::StrFormat("%X", u);
    default: {  // 'b'
      std::string digits;
      do {
        digits.push_back(static_cast<char>('0' + (u & 1)));
        u >>= 1;
      } while (u != 0);
      std::reverse(digits.begin(), digits.end());
      return digits;
    }
  }
}

// Go's %b, %o, %x and %X of an int64: the magnitude in that base, with a
// leading '-' when negative.
std::string SignedInBase(int64_t i, char verb) {
  const uint64_t magnitude = i < 0 ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
  return StrCat(i < 0 ? "-" : "", UnsignedInBase(magnitude, verb));
}

// x/text's en_US rendering of a double with `precision` fraction digits:
// "1,234.500", "∞", "NaN".
std::string FixedEnUs(double d, int precision) {
  if (std::isnan(d)) return "NaN";
  const bool negative = d < 0;
  if (std::isinf(d)) return negative ? "-\u221E" : "\u221E";
  std::string digits = absl::StrFormat("%.*f", precision, std::fabs(d));
  size_t point = digits.find('.');
  std::string_view integer(digits.data(), point == std::string::npos ? digits.size() : point);
  std::string out = negative ? "-" : "";
  for (size_t i = 0; i < integer.size(); ++i) {
    if (i > 0 && (integer.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(integer[i]);
  }
  if (point != std::string::npos) out.append(digits, point, std::string::npos);
  return out;
}

// x/text's en_US scientific form, "2.718280 × 10⁰⁰", with cel-go v0.26's
// "%<precision>e": always six fraction digits, padded on the left with
// spaces to `width` code points.
std::string ScientificEnUs(double d, int width) {
  static constexpr std::string_view kSuperscript[] = {"\u2070", "\u00B9", "\u00B2", "\u00B3",
                                                      "\u2074", "\u2075", "\u2076", "\u2077",
                                                      "\u2078", "\u2079"};
  std::string out;
  if (std::isnan(d)) {
    out.append("NaN");
  } else if (std::isinf(d)) {
    out.append(d < 0 ? "-\u221E" : "\u221E");
  } else {
    std::string sci = absl::StrFormat("%.6e", std::fabs(d));  // 2.718280e+00
    size_t e = sci.find('e');
    int exponent = std::atoi(sci.c_str() + e + 1);
    if (d < 0) out.push_back('-');
    out.append(sci, 0, e);
    out.append("\u202F\u00D7\u202F10");
    if (exponent < 0) out.append("\u207B");
    std::string power = StrCat(std::abs(exponent));
    if (power.size() < 2) power.insert(power.begin(), '0');
    for (char c : power) out.append(kSuperscript[c - '0']);
  }
  const size_t length = CodePointCount(out);
  if (static_cast<size_t>(width) <= length) return out;
  std::string padded(width - length, ' ');
  padded.append(out);
  return padded;
}

// A double for %f / %e: a double, or the strings "NaN", "Infinity" and
// "-Infinity" that cel-go also takes there.
bool FloatArgument(const Value& v, double* out) {
  if (v.kind() == Kind::kDouble) {
    *out = v.double_value();
    return true;
  }
  if (v.kind() != Kind::kString) return false;
  if (v.str() == "NaN") {
    *out = std::nan("");
  } else if (v.str() == "Infinity") {
    *out = HUGE_VAL;
  } else if (v.str() == "-Infinity") {
    *out = -HUGE_VAL;
  } else {
    return false;
  }
  return true;
}

std::string FormatAsString(const Value& v, std::string* out);

// A list element or map value: as a CEL literal (quoted strings, bytes as
// b"..", doubles with six fraction digits, timestamp("...")).
std::string FormatMember(const Value& v, std::string* out) {
  switch (v.kind()) {
    case Kind::kInt:
    case Kind::kUint:
    case Kind::kBool:
    case Kind::kNull:
    case Kind::kType:
    case Kind::kList:
    case Kind::kMap:
      return FormatAsString(v, out);
    case Kind::kString:
      *out = GoQuote(v.str());
      return "";
    case Kind::kBytes: {
      std::string text;
      if (std::string err = FormatAsString(v, &text); !err.empty()) return err;
      *out = StrCat("b", GoQuote(text));
      return "";
    }
    case Kind::kTimestamp:
    case Kind::kDuration:
      *out = StrCat(v.kind() == Kind::kTimestamp ? "timestamp(" : "duration(",
                    GoQuote(ConvertToString(v).str()), ")");
      return "";
    case Kind::kDouble: {
      const double d = v.double_value();
      if (std::isnan(d)) {
        SetText(out, "\"NaN\"");
      } else if (std::isinf(d)) {
        SetText(out, d > 0 ? "\"+Inf\"" : "\"-Inf\"");
      } else {
        *out = absl::StrFormat("%.6f", d);
      }
      return "";
    }
    default:
      return StrCat("no formatting function for ", v.TypeName());
  }
}

std::string FormatList(const Value& list, std::string* out) {
  SetText(out, "[");
  bool first = true;
  for (const Value& item : list.list()) {
    std::string text;
    if (std::string err = FormatMember(item, &text); !err.empty()) return err;
    if (!first) out->append(", ");
    out->append(text);
    first = false;
  }
  out->push_back(']');
  return "";
}

// Entries sorted by their printed key: "{"a":1, 2:"b"}".
std::string FormatMap(const Value& map, std::string* out) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [key, value] : map.map().entries) {
    std::string k, v;
    if (key.kind() == Kind::kString) {
      k = GoQuote(key.str());
    } else if (key.kind() == Kind::kBool || key.kind() == Kind::kInt || key.kind() == Kind::kUint) {
      FormatAsString(key, &k);
    } else {
      return StrCat("no formatting function for map key of type ", key.TypeName());
    }
    if (std::string err = FormatMember(value, &v); !err.empty()) return err;
    entries.emplace_back(std::move(k), std::move(v));
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  SetText(out, "{");
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out->append(", ");
    out->append(entries[i].first);
    out->push_back(':');
    out->append(entries[i].second);
  }
  out->push_back('}');
  return "";
}

// %s, and scalars inside lists and maps.
std::string FormatAsString(const Value& v, std::string* out) {
  switch (v.kind()) {
    case Kind::kList:
      return FormatList(v, out);
    case Kind::kMap:
      return FormatMap(v, out);
    case Kind::kNull:
      SetText(out, "null");
      return "";
    case Kind::kType:
      *out = v.str();
      return "";
    case Kind::kInt:
    case Kind::kUint:
    case Kind::kDouble:
    case Kind::kBool:
    case Kind::kString:
    case Kind::kBytes:
    case Kind::kTimestamp:
    case Kind::kDuration: {
      Value s = ConvertToString(v);
      if (s.is_error()) {
        return StrCat("could not convert argument \"", s.error().message, "\" to string");
      }
      *out = s.str();
      return "";
    }
    default:
      return FormatClauseError('s', v.TypeName());
  }
}

// One clause applied to its argument.
std::string FormatClause(char verb, int precision, const Value& v, std::string* out) {
  if (!FormatVerbAccepts(verb, TypeKindOf(v))) return FormatClauseError(verb, v.TypeName());
  switch (verb) {
    case 's':
      return FormatAsString(v, out);
    case 'f':
    case 'e': {
      double d;
      if (!FloatArgument(v, &d)) return FormatClauseError(verb, v.TypeName());
      const int p = precision < 0 ? kDefaultPrecision : precision;
      *out = verb == 'f' ? FixedEnUs(d, p) : ScientificEnUs(d, p);
      return "";
    }
    case 'b':
      if (v.kind() == Kind::kBool) {
        SetText(out, v.bool_value() ? "1" : "0");
        return "";
      }
      [[fallthrough]];
    default:  // d b o x X
      if (v.kind() == Kind::kInt) {
        *out = verb == 'd' ? StrCat(v.int_value()) : SignedInBase(v.int_value(), verb);
      } else if (v.kind() == Kind::kUint) {
        *out = verb == 'd' ? StrCat(v.uint_value()) : UnsignedInBase(v.uint_value(), verb);
      } else {  // %x of a string or bytes: its bytes in hex
        *out = verb == 'X' ? absl::AsciiStrToUpper(absl::BytesToHexString(v.str()))
                           : absl::BytesToHexString(v.str());
      }
      return "";
  }
}

class Formatter : public FormatVisitor {
 public:
  explicit Formatter(const ValueList& args) : args_(args) {}
  void Text(std::string_view text) override { out_.append(text); }
  std::string Clause(size_t index, char verb, int precision) override {
    std::string text;
    std::string err = FormatClause(verb, precision, args_[index], &text);
    out_.append(text);
    return err;
  }
  std::string& out() { return out_; }

 private:
  const ValueList& args_;
  std::string out_;
};

Value Format(const Value* const* a, size_t, EvalContext& ctx) {
  Formatter formatter((*a[1]).list());
  std::string err = WalkFormat((*a[0]).str(), (*a[1]).list().size(), formatter);
  if (!err.empty()) return Value::Error(std::move(err));
  if (!ctx.Charge(static_cast<int64_t>(formatter.out().size() / 10))) return CostLimitExceeded();
  return Value::String(std::move(formatter.out()));
}

}  // namespace

bool FormatVerbAccepts(char verb, Type::Kind kind) {
  using K = Type::Kind;
  // Statically, dyn passes and the DRA attribute type (google.protobuf.Any
  // in cel-go) does not: cel-go's validator accepts only dyn.
  if (kind == K::kDyn || kind == K::kParam) return true;
  auto one_of = [kind](std::initializer_list<K> kinds) {
    return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
  };
  switch (verb) {
    case 's':
      return one_of({K::kList, K::kMap, K::kInt, K::kUint, K::kDouble, K::kBool, K::kString,
                     K::kTimestamp, K::kBytes, K::kDuration, K::kType, K::kNull});
    case 'd':
    case 'o':
      return one_of({K::kInt, K::kUint});
    case 'f':
    case 'e':
      return one_of({K::kDouble, K::kString});
    case 'b':
      return one_of({K::kInt, K::kUint, K::kBool});
    default:  // x X
      return one_of({K::kInt, K::kUint, K::kString, K::kBytes});
  }
}

std::string FormatClauseError(char verb, std::string_view type_name) {
  std::string_view what;
  switch (verb) {
    case 's':
      what =
          "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, "
          "types, durations, and timestamps";
      break;
    case 'd':
      what = "decimal clause can only be used on integers";
      break;
    case 'f':
      what = "fixed-point clause can only be used on doubles";
      break;
    case 'e':
      what = "scientific clause can only be used on doubles";
      break;
    case 'b':
      what = "only integers and bools can be formatted as binary";
      break;
    case 'o':
      what = "octal clause can only be used on integers";
      break;
    default:
      what = "only integers, byte buffers, and strings can be formatted as hex";
  }
  return StrCat(std::string(what), ", was given ", std::string(type_name));
}

std::string WalkFormat(std::string_view format, size_t arg_count, FormatVisitor& visitor) {
  size_t i = 0, arg = 0, text_start = 0;
  auto flush = [&](size_t end) {
    if (end > text_start) visitor.Text(format.substr(text_start, end - text_start));
  };
  while (i < format.size()) {
    if (format[i] != '%') {
      ++i;
      continue;
    }
    flush(i);
    if (i + 1 < format.size() && format[i + 1] == '%') {
      visitor.Text("%");
      i += 2;
      text_start = i;
      continue;
    }
    // cel-go's order: the argument first, then the clause.
    if (arg >= arg_count) return StrCat("index ", arg, " out of range");
    if (i + 1 >= format.size()) return "unexpected end of string";
    size_t j = i + 1;
    int precision = -1;
    if (format[j] == '.') {
      size_t digits = ++j;
      for (;; ++j) {
        if (j >= format.size()) {
          return "could not parse formatting clause: error while parsing precision: could not "
                 "find end of precision specifier";
        }
        if (format[j] < '0' || format[j] > '9') break;
      }
      std::string_view number = format.substr(digits, j - digits);
      if (number.empty()) {
        return "could not parse formatting clause: error while parsing precision: error while "
               "converting precision to integer: strconv.Atoi: parsing \"\": invalid syntax";
      }
      if (number.size() > 9 || std::stoi(std::string(number)) > kMaxPrecision) {
        return StrCat(
            "could not parse formatting clause: error while parsing precision: precision ",
            std::string(number), " exceeds maximum allowed precision ", kMaxPrecision);
      }
      precision = std::stoi(std::string(number));
    }
    const char verb = format[j++];
    if (std::string_view("sdfebxXo").find(verb) == std::string_view::npos) {
      // Go reads one byte and prints it as a rune.
      std::string shown;
      AppendUtf8(shown, static_cast<unsigned char>(verb));
      return StrCat("could not parse formatting clause: unrecognized formatting clause \"", shown,
                    "\"");
    }
    if (std::string err = visitor.Clause(arg, verb, precision); !err.empty()) {
      return StrCat("error during formatting: ", err);
    }
    ++arg;
    i = text_start = j;
  }
  flush(format.size());
  return "";
}

void RegisterFormat(FunctionRegistry& r) { r.Add("<string>.format(list(dyn)) -> string", Format); }

}  // namespace canhazgpu::cel
