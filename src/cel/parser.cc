#include "cel/parser.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/strings/ascii.h"
#include "cel/functions.h"
#include "core/strings.h"

namespace canhazgpu::cel {
namespace {

enum class Tok : uint8_t {
  kEnd,
  kIdent,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kQuotedIdent,  // `name`
  kPunct,        // operators and brackets: text holds them
  kError,
};

struct Token {
  Tok kind = Tok::kEnd;
  int32_t offset = 0;
  std::string text;  // identifier, punctuation, or the decoded literal
  uint64_t number = 0;
  double real = 0;
};

bool IsReserved(std::string_view id) {
  static constexpr std::string_view kReserved[] = {
      "as",  "break", "const",   "continue",  "else",   "for", "function", "if",   "import",
      "let", "loop",  "package", "namespace", "return", "var", "void",     "while"};
  for (std::string_view r : kReserved) {
    if (id == r) return true;
  }
  return false;
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  Token Next() {
    SkipSpaceAndComments();
    Token t;
    t.offset = static_cast<int32_t>(pos_);
    if (pos_ >= src_.size()) return t;
    char c = src_[pos_];
    if (c == '`') return QuotedIdent(t);
    if (absl::ascii_isalpha(c) || c == '_') {
      // String prefixes: r, R, b, B, and b/B followed by r/R.
      size_t p = pos_;
      bool bytes = false, raw = false;
      if (src_[p] == 'b' || src_[p] == 'B') bytes = true, ++p;
      if (p < src_.size() && (src_[p] == 'r' || src_[p] == 'R')) raw = true, ++p;
      if ((bytes || raw) && p < src_.size() && (src_[p] == '"' || src_[p] == '\'')) {
        pos_ = p;
        return StringLiteral(t, bytes, raw);
      }
      size_t start = pos_;
      while (pos_ < src_.size() && (absl::ascii_isalnum(src_[pos_]) || src_[pos_] == '_')) ++pos_;
      t.kind = Tok::kIdent;
      t.text = std::string(src_.substr(start, pos_ - start));
      return t;
    }
    if (absl::ascii_isdigit(c) ||
        (c == '.' && pos_ + 1 < src_.size() && absl::ascii_isdigit(src_[pos_ + 1]))) {
      return Number(t);
    }
    if (c == '"' || c == '\'') return StringLiteral(t, false, false);
    static constexpr std::string_view kTwo[] = {"==", "!=", "<=", ">=", "&&", "||"};
    for (std::string_view op : kTwo) {
      if (src_.substr(pos_, 2) == op) {
        pos_ += 2;
        t.kind = Tok::kPunct;
        t.text = std::string(op);
        return t;
      }
    }
    if (std::string_view("<>!+-*/%?:.,()[]{}").find(c) != std::string_view::npos) {
      ++pos_;
      t.kind = Tok::kPunct;
      t.text = std::string(1, c);
      return t;
    }
    return Error(t, StrCat("unexpected character '", std::string(1, c), "'"));
  }

 private:
  void SkipSpaceAndComments() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '/') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  Token Error(Token t, std::string message) {
    t.kind = Tok::kError;
    t.text = std::move(message);
    pos_ = src_.size();
    return t;
  }

  Token QuotedIdent(Token t) {
    size_t end = src_.find('`', pos_ + 1);
    if (end == std::string_view::npos) return Error(t, "unterminated quoted identifier");
    t.kind = Tok::kQuotedIdent;
    t.text = std::string(src_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    if (t.text.empty()) return Error(t, "empty quoted identifier");
    return t;
  }

  Token Number(Token t) {
    size_t start = pos_;
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() &&
        (src_[pos_ + 1] == 'x' || src_[pos_ + 1] == 'X')) {
      pos_ += 2;
      size_t digits = pos_;
      while (pos_ < src_.size() && absl::ascii_isxdigit(src_[pos_])) ++pos_;
      if (pos_ == digits) return Error(t, "invalid hex literal");
      std::string hex(src_.substr(digits, pos_ - digits));
      errno = 0;
      unsigned long long v = std::strtoull(hex.c_str(), nullptr, 16);
      if (errno == ERANGE || hex.size() > 16) return Error(t, "integer literal out of range");
      t.number = v;
      return IntegerSuffix(t);
    }
    while (pos_ < src_.size() && absl::ascii_isdigit(src_[pos_])) ++pos_;
    bool real = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && absl::ascii_isdigit(src_[pos_ + 1])) {
      real = true;
      ++pos_;
      while (pos_ < src_.size() && absl::ascii_isdigit(src_[pos_])) ++pos_;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && absl::ascii_isdigit(src_[p])) {
        real = true;
        pos_ = p;
        while (pos_ < src_.size() && absl::ascii_isdigit(src_[pos_])) ++pos_;
      }
    }
    std::string text(src_.substr(start, pos_ - start));
    if (real) {
      t.kind = Tok::kDouble;
      t.real = std::strtod(text.c_str(), nullptr);  // round to nearest; 1e-324 -> 0
      return t;
    }
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE) return Error(t, "integer literal out of range");
    t.number = v;
    return IntegerSuffix(t);
  }

  Token IntegerSuffix(Token t) {
    if (pos_ < src_.size() && (src_[pos_] == 'u' || src_[pos_] == 'U')) {
      ++pos_;
      t.kind = Tok::kUint;
    } else {
      t.kind = Tok::kInt;  // range checked by the parser, which knows the sign
    }
    return t;
  }

  Token StringLiteral(Token t, bool bytes, bool raw) {
    char quote = src_[pos_];
    bool triple = src_.substr(pos_, 3) == std::string(3, quote);
    pos_ += triple ? 3 : 1;
    std::string out;
    while (true) {
      if (pos_ >= src_.size()) return Error(t, "unterminated string literal");
      char c = src_[pos_];
      if (triple ? src_.substr(pos_, 3) == std::string(3, quote) : c == quote) {
        pos_ += triple ? 3 : 1;
        break;
      }
      if (!triple && (c == '\n' || c == '\r')) return Error(t, "newline in string literal");
      if (c != '\\' || raw) {
        out.push_back(c);
        ++pos_;
        continue;
      }
      if (auto error = Escape(&out, bytes); !error.empty()) return Error(t, error);
    }
    t.kind = bytes ? Tok::kBytes : Tok::kString;
    t.text = std::move(out);
    return t;
  }

  // At a backslash: decodes one escape into out; returns an error or "".
  std::string Escape(std::string* out, bool bytes) {
    ++pos_;
    if (pos_ >= src_.size()) return "unterminated escape";
    char c = src_[pos_++];
    switch (c) {
      case '\\':
      case '?':
      case '"':
      case '\'':
      case '`':
        out->push_back(c);
        return "";
      case 'a':
        out->push_back('\a');
        return "";
      case 'b':
        out->push_back('\b');
        return "";
      case 'f':
        out->push_back('\f');
        return "";
      case 'n':
        out->push_back('\n');
        return "";
      case 'r':
        out->push_back('\r');
        return "";
      case 't':
        out->push_back('\t');
        return "";
      case 'v':
        out->push_back('\v');
        return "";
      default:
        break;
    }
    int digits = 0, base = 16;
    if (c == 'x' || c == 'X')
      digits = 2;
    else if (c == 'u')
      digits = 4;
    else if (c == 'U')
      digits = 8;
    else if (c >= '0' && c <= '3')
      digits = 2, base = 8, --pos_, ++digits;
    else
      return StrCat("invalid escape sequence '\\", std::string(1, c), "'");
    if (pos_ + digits > src_.size()) return "truncated escape sequence";
    uint32_t cp = 0;
    for (int i = 0; i < digits; ++i) {
      char d = src_[pos_++];
      int v;
      if (d >= '0' && d <= '9')
        v = d - '0';
      else if (base == 16 && d >= 'a' && d <= 'f')
        v = d - 'a' + 10;
      else if (base == 16 && d >= 'A' && d <= 'F')
        v = d - 'A' + 10;
      else
        return "invalid digit in escape sequence";
      if (base == 8 && v > 7) return "invalid octal escape";
      cp = cp * base + v;
    }
    bool octet = c == 'x' || c == 'X' || base == 8;
    if (bytes && octet) {
      out->push_back(static_cast<char>(cp));
      return "";
    }
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return "invalid code point in escape";
    *out += EncodeUtf8(std::u32string(1, static_cast<char32_t>(cp)));
    return "";
  }

  std::string_view src_;
  size_t pos_ = 0;
};

class Parser {
 public:
  Parser(std::string_view src, const ParseOptions& options)
      : src_(src), options_(options), lexer_(src) {
    Advance();
  }

  absl::StatusOr<ExprPtr> ParseAll() {
    ExprPtr e = ParseExpr();
    if (error_.empty() && tok_.kind != Tok::kEnd)
      Fail(tok_.offset, StrCat("unexpected '", TokText(), "'"));
    if (error_.empty()) CheckHeight(*e);
    if (!error_.empty()) {
      return absl::InvalidArgumentError(FormatError(src_, error_offset_, error_));
    }
    return e;
  }

 private:
  void Advance() {
    tok_ = lexer_.Next();
    if (tok_.kind == Tok::kError) {
      Fail(tok_.offset, tok_.text);
    }
  }

  std::string NestingError() const {
    return StrCat("expression nested more than ", options_.max_depth, " levels");
  }

  // Chains the parser builds in loops (a.b.c, x[0][0], 1 + 1 + 1) nest the
  // tree without nesting the parser; the tree's height bounds every later
  // recursion (checker, folding, planner, evaluator), so it is checked here,
  // without recursion.
  void CheckHeight(const Expr& root) {
    std::vector<std::pair<const Expr*, int>> stack = {{&root, 1}};
    while (!stack.empty()) {
      auto [e, height] = stack.back();
      stack.pop_back();
      if (height > options_.max_depth) return Fail(e->offset, NestingError());
      if (e->target) stack.emplace_back(e->target.get(), height + 1);
      for (const ExprPtr& arg : e->args) stack.emplace_back(arg.get(), height + 1);
    }
  }

  std::string TokText() const { return tok_.kind == Tok::kEnd ? "end of input" : tok_.text; }

  void Fail(int32_t offset, std::string message) {
    if (error_.empty()) {
      error_ = std::move(message);
      error_offset_ = offset;
    }
    tok_ = Token();  // kEnd stops every loop
    tok_.offset = static_cast<int32_t>(src_.size());
  }

  bool Is(std::string_view punct) const { return tok_.kind == Tok::kPunct && tok_.text == punct; }

  bool Accept(std::string_view punct) {
    if (!Is(punct)) return false;
    Advance();
    return true;
  }

  void Expect(std::string_view punct) {
    if (!Accept(punct))
      Fail(tok_.offset, StrCat("expected '", punct, "' but found '", TokText(), "'"));
  }

  static ExprPtr Node(ExprKind kind, int32_t offset) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->offset = offset;
    return e;
  }

  static ExprPtr Call(std::string fn, int32_t offset, std::vector<ExprPtr> args) {
    ExprPtr e = Node(ExprKind::kCall, offset);
    e->name = std::move(fn);
    e->args = std::move(args);
    return e;
  }

  template <typename... E>
  static ExprPtr Op(std::string fn, int32_t offset, E... operands) {
    std::vector<ExprPtr> args;
    (args.push_back(std::move(operands)), ...);
    return Call(std::move(fn), offset, std::move(args));
  }

  struct DepthGuard {
    Parser* p;
    explicit DepthGuard(Parser* parser) : p(parser) {
      if (++p->depth_ > p->options_.max_depth) p->Fail(p->tok_.offset, p->NestingError());
    }
    ~DepthGuard() { --p->depth_; }
  };

  ExprPtr ParseExpr() {
    DepthGuard guard(this);
    int32_t offset = tok_.offset;
    ExprPtr cond = ParseOr();
    if (!Is("?")) return cond;
    offset = tok_.offset;
    Advance();
    ExprPtr yes = ParseOr();
    Expect(":");
    ExprPtr no = ParseExpr();
    return Op("_?_:_", offset, std::move(cond), std::move(yes), std::move(no));
  }

  ExprPtr ParseOr() { return ParseLogical("||", "_||_", &Parser::ParseAnd); }
  ExprPtr ParseAnd() { return ParseLogical("&&", "_&&_", &Parser::ParseRelation); }

  // A chain of && (||) becomes a balanced tree, as cel-go builds it: a
  // long conjunction is not a deep tree (and the operator is associative).
  ExprPtr ParseLogical(std::string_view punct, const char* fn, ExprPtr (Parser::*operand)()) {
    std::vector<ExprPtr> terms;
    std::vector<int32_t> ops;
    terms.push_back((this->*operand)());
    while (Is(punct)) {
      ops.push_back(tok_.offset);
      Advance();
      terms.push_back((this->*operand)());
    }
    if (ops.empty()) return std::move(terms[0]);
    return Balanced(fn, terms, ops, 0, ops.size() - 1);
  }

  // The operators ops[lo..hi] over terms[lo..hi + 1]; recursion depth log n.
  static ExprPtr Balanced(const char* fn, std::vector<ExprPtr>& terms,
                          const std::vector<int32_t>& ops, size_t lo, size_t hi) {
    const size_t mid = (lo + hi + 1) / 2;
    ExprPtr left = mid == lo ? std::move(terms[mid]) : Balanced(fn, terms, ops, lo, mid - 1);
    ExprPtr right = mid == hi ? std::move(terms[mid + 1]) : Balanced(fn, terms, ops, mid + 1, hi);
    return Op(fn, ops[mid], std::move(left), std::move(right));
  }

  ExprPtr ParseRelation() {
    ExprPtr left = ParseAddition();
    while (true) {
      std::string fn;
      if (Is("<"))
        fn = "_<_";
      else if (Is("<="))
        fn = "_<=_";
      else if (Is(">"))
        fn = "_>_";
      else if (Is(">="))
        fn = "_>=_";
      else if (Is("=="))
        fn = "_==_";
      else if (Is("!="))
        fn = "_!=_";
      else if (tok_.kind == Tok::kIdent && tok_.text == "in")
        fn = "@in";
      else
        return left;
      int32_t offset = tok_.offset;
      Advance();
      left = Op(fn, offset, std::move(left), ParseAddition());
    }
  }

  ExprPtr ParseAddition() {
    ExprPtr left = ParseMultiplication();
    while (Is("+") || Is("-")) {
      std::string fn = Is("+") ? "_+_" : "_-_";
      int32_t offset = tok_.offset;
      Advance();
      left = Op(fn, offset, std::move(left), ParseMultiplication());
    }
    return left;
  }

  ExprPtr ParseMultiplication() {
    ExprPtr left = ParseUnary();
    while (Is("*") || Is("/") || Is("%")) {
      std::string fn = Is("*") ? "_*_" : (Is("/") ? "_/_" : "_%_");
      int32_t offset = tok_.offset;
      Advance();
      left = Op(fn, offset, std::move(left), ParseUnary());
    }
    return left;
  }

  ExprPtr ParseUnary() {
    int32_t offset = tok_.offset;
    if (Is("!")) {
      int count = 0;
      while (Accept("!")) ++count;
      ExprPtr operand = ParseMember();
      return count % 2 == 0 ? std::move(operand) : Op("!_", offset, std::move(operand));
    }
    if (Is("-")) {
      int count = 0;
      while (Accept("-")) ++count;
      // A minus directly before a number literal is the literal's sign, so
      // -9223372036854775808 is representable.
      if (tok_.kind == Tok::kInt || tok_.kind == Tok::kDouble) {
        --count;
        ExprPtr operand = ParseMember(/*negate_literal=*/true);
        return count % 2 == 0 ? std::move(operand) : Op("-_", offset, std::move(operand));
      }
      ExprPtr operand = ParseMember();
      return count % 2 == 0 ? std::move(operand) : Op("-_", offset, std::move(operand));
    }
    return ParseMember();
  }

  ExprPtr ParseMember(bool negate_literal = false) {
    ExprPtr e = ParsePrimary(negate_literal);
    while (error_.empty()) {
      int32_t offset = tok_.offset;
      if (Accept(".")) {
        bool optional = Accept("?");
        std::string field;
        if (tok_.kind == Tok::kIdent) {
          field = tok_.text;
        } else if (tok_.kind == Tok::kQuotedIdent && options_.quoted_field_selection) {
          field = tok_.text;
          if (Is("(")) {
            Fail(tok_.offset, "a quoted name cannot be called");
            break;
          }
        } else {
          Fail(tok_.offset, StrCat("expected a field name after '.' but found '", TokText(), "'"));
          break;
        }
        bool quoted = tok_.kind == Tok::kQuotedIdent;
        int32_t name_offset = tok_.offset;
        Advance();
        if (!optional && !quoted && Is("(")) {
          Advance();
          std::vector<ExprPtr> args = ParseList(")");
          e = MemberCall(std::move(e), field, name_offset, std::move(args));
          continue;
        }
        ExprPtr select = Node(ExprKind::kSelect, offset);
        select->name = field;
        select->optional = optional;
        select->target = std::move(e);
        e = std::move(select);
      } else if (Accept("[")) {
        bool optional = Accept("?");
        ExprPtr index = ParseExpr();
        Expect("]");
        e = Op(optional ? "_[?_]" : "_[_]", offset, std::move(e), std::move(index));
      } else {
        break;
      }
    }
    return e;
  }

  std::vector<ExprPtr> ParseList(std::string_view close, std::vector<bool>* optional = nullptr) {
    std::vector<ExprPtr> items;
    while (error_.empty() && !Is(close)) {
      if (optional != nullptr) optional->push_back(Accept("?"));
      items.push_back(ParseExpr());
      if (!Accept(",")) break;
    }
    Expect(close);
    return items;
  }

  ExprPtr ParsePrimary(bool negate_literal) {
    int32_t offset = tok_.offset;
    switch (tok_.kind) {
      case Tok::kInt: {
        uint64_t limit = negate_literal ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
        if (tok_.number > limit) {
          Fail(offset, "integer literal out of range");
          return Node(ExprKind::kConst, offset);
        }
        ExprPtr e = Node(ExprKind::kConst, offset);
        int64_t v = negate_literal ? static_cast<int64_t>(0 - tok_.number)
                                   : static_cast<int64_t>(tok_.number);
        e->value = Value::Int(v);
        Advance();
        return e;
      }
      case Tok::kUint: {
        ExprPtr e = Node(ExprKind::kConst, offset);
        e->value = Value::Uint(tok_.number);
        Advance();
        return e;
      }
      case Tok::kDouble: {
        ExprPtr e = Node(ExprKind::kConst, offset);
        e->value = Value::Double(negate_literal ? -tok_.real : tok_.real);
        Advance();
        return e;
      }
      case Tok::kString:
      case Tok::kBytes: {
        ExprPtr e = Node(ExprKind::kConst, offset);
        e->value = tok_.kind == Tok::kString ? Value::String(tok_.text) : Value::Bytes(tok_.text);
        Advance();
        return e;
      }
      case Tok::kIdent:
        return ParseIdent(/*root=*/false);
      case Tok::kPunct:
        break;
      default:
        Fail(offset, StrCat("unexpected '", TokText(), "'"));
        return Node(ExprKind::kConst, offset);
    }
    if (Is(".")) {
      Advance();
      if (tok_.kind != Tok::kIdent) {
        Fail(tok_.offset, "expected an identifier after a leading '.'");
        return Node(ExprKind::kConst, offset);
      }
      return ParseIdent(/*root=*/true);
    }
    if (Accept("(")) {
      ExprPtr e = ParseExpr();
      Expect(")");
      return e;
    }
    if (Accept("[")) {
      ExprPtr e = Node(ExprKind::kList, offset);
      e->args = ParseList("]", &e->optional_entries);
      return e;
    }
    if (Accept("{")) {
      ExprPtr e = Node(ExprKind::kMap, offset);
      while (error_.empty() && !Is("}")) {
        e->optional_entries.push_back(Accept("?"));
        e->args.push_back(ParseExpr());
        Expect(":");
        e->args.push_back(ParseExpr());
        if (!Accept(",")) break;
      }
      Expect("}");
      return e;
    }
    Fail(offset, StrCat("unexpected '", TokText(), "'"));
    return Node(ExprKind::kConst, offset);
  }

  ExprPtr ParseIdent(bool root) {
    int32_t offset = tok_.offset;
    std::string name = tok_.text;
    if (name == "true" || name == "false" || name == "null") {
      Advance();
      ExprPtr e = Node(ExprKind::kConst, offset);
      e->value = name == "null" ? Value::Null() : Value::Bool(name == "true");
      return e;
    }
    if (name == "in" || IsReserved(name)) {
      Fail(offset, StrCat("reserved identifier '", name, "'"));
      return Node(ExprKind::kConst, offset);
    }
    Advance();
    if (Is("{")) {
      Fail(tok_.offset, "message construction is not supported");
      return Node(ExprKind::kConst, offset);
    }
    if (Accept("(")) {
      std::vector<ExprPtr> args = ParseList(")");
      if (options_.enable_macros && !root && name == "has") {
        if (args.size() != 1 || args[0]->kind != ExprKind::kSelect || args[0]->optional) {
          Fail(offset, "invalid argument to has() macro");
          return Node(ExprKind::kConst, offset);
        }
        args[0]->test_only = true;
        args[0]->offset = offset;
        return std::move(args[0]);
      }
      ExprPtr call = Call(name, offset, std::move(args));
      call->root = root;
      return call;
    }
    ExprPtr e = Node(ExprKind::kIdent, offset);
    e->name = std::move(name);
    e->root = root;
    return e;
  }

  // Expands receiver-style macros; everything else is a member call.
  ExprPtr MemberCall(ExprPtr target, const std::string& fn, int32_t offset,
                     std::vector<ExprPtr> args) {
    if (options_.enable_macros) {
      if (ExprPtr macro = ExpandMacro(target, fn, offset, args)) return macro;
      if (!error_.empty()) return Node(ExprKind::kConst, offset);
    }
    ExprPtr call = Call(fn, offset, std::move(args));
    call->target = std::move(target);
    return call;
  }

  bool VarName(const ExprPtr& arg, std::string* out) {
    if (arg->kind != ExprKind::kIdent || arg->root) {
      Fail(arg->offset, "argument must be a simple name");
      return false;
    }
    *out = arg->name;
    return true;
  }

  ExprPtr ExpandMacro(ExprPtr& target, const std::string& fn, int32_t offset,
                      std::vector<ExprPtr>& args) {
    size_t n = args.size();
    struct Shape {
      std::string_view name;
      size_t args;
      Macro macro;
      int vars;
    };
    static constexpr Shape kShapes[] = {
        {"all", 2, Macro::kAll, 1},
        {"exists", 2, Macro::kExists, 1},
        {"exists_one", 2, Macro::kExistsOne, 1},
        {"existsOne", 2, Macro::kExistsOne, 1},
        {"map", 2, Macro::kMap, 1},
        {"map", 3, Macro::kMapFilter, 1},
        {"filter", 2, Macro::kFilter, 1},
        {"all", 3, Macro::kAll, 2},
        {"exists", 3, Macro::kExists, 2},
        {"exists_one", 3, Macro::kExistsOne, 2},
        {"existsOne", 3, Macro::kExistsOne, 2},
        {"transformList", 3, Macro::kTransformList, 2},
        {"transformList", 4, Macro::kTransformList, 2},
        {"transformMap", 3, Macro::kTransformMap, 2},
        {"transformMap", 4, Macro::kTransformMap, 2},
        {"transformMapEntry", 3, Macro::kTransformMapEntry, 2},
        {"transformMapEntry", 4, Macro::kTransformMapEntry, 2},
        {"optMap", 2, Macro::kOptMap, 1},
        {"optFlatMap", 2, Macro::kOptFlatMap, 1},
    };
    bool is_bind =
        fn == "bind" && n == 3 && target->kind == ExprKind::kIdent && target->name == "cel";
    const Shape* shape = nullptr;
    for (const Shape& s : kShapes) {
      if (s.name == fn && s.args == n) shape = &s;
    }
    if (shape == nullptr && !is_bind) return nullptr;
    ExprPtr e = Node(ExprKind::kComprehension, offset);
    if (!VarName(args[0], &e->name)) return nullptr;
    if (is_bind) {
      e->macro = Macro::kBind;
      e->args.push_back(std::move(args[1]));
      e->args.push_back(std::move(args[2]));
      return e;
    }
    e->macro = shape->macro;
    size_t first_body = 1;
    if (shape->vars == 2) {
      if (!VarName(args[1], &e->name2)) return nullptr;
      if (e->name2 == e->name) {
        Fail(args[1]->offset, StrCat("duplicate variable name '", e->name, "'"));
        return nullptr;
      }
      first_body = 2;
    }
    e->target = std::move(target);
    for (size_t i = first_body; i < n; ++i) e->args.push_back(std::move(args[i]));
    return e;
  }

  std::string_view src_;
  ParseOptions options_;
  Lexer lexer_;
  Token tok_;
  int depth_ = 0;
  std::string error_;
  int32_t error_offset_ = 0;
};

}  // namespace

// Children are detached and freed one at a time: a tree as deep as a long
// chain (one the parser rejects for its height included) must not take a
// recursion per level to free.
Expr::~Expr() {
  std::vector<ExprPtr> pending;
  auto detach = [&pending](Expr& e) {
    if (e.target) pending.push_back(std::move(e.target));
    for (ExprPtr& arg : e.args) pending.push_back(std::move(arg));
    e.args.clear();
  };
  detach(*this);
  while (!pending.empty()) {
    ExprPtr next = std::move(pending.back());
    pending.pop_back();
    detach(*next);
  }  // `next` is freed here, childless
}

absl::StatusOr<ExprPtr> Parse(std::string_view source, const ParseOptions& options) {
  Parser parser(source, options);
  return parser.ParseAll();
}

}  // namespace canhazgpu::cel
