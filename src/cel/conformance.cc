#include "cel/conformance.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/escaping.h"
#include "cel/dra_device.h"
#include "cel/program.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cel {
namespace {

using nlohmann::json;

Value CallBuiltin(std::string_view name, Value arg) {
  EvalContext ctx;
  const FunctionGroup* group = Functions().Find(name, false, 1);
  const Value* args[1] = {&arg};
  return Dispatch(*group, args, 1, ctx);
}

// Case files are small (cel-spec's whole suite is about 300 KiB): a file
// past this, or one that is not a regular file (/dev/zero, a FIFO), is
// refused before it is read, and no read goes past it either.
constexpr std::uintmax_t kMaxCaseFileBytes = 16 << 20;
// Values in cases nest a few levels; a decoder recursion per level.
constexpr int kMaxValueDepth = 64;
// A case line: its own few levels plus two per value level ({"list":[...]}).
constexpr int kMaxJsonDepth = 2 * kMaxValueDepth + 16;

absl::StatusOr<Value> Decode(const json& j, int depth = 0);

absl::StatusOr<Value> DecodeDuration(const std::string& text) {
  // "123.321456789s": seconds with up to 9 fractional digits.
  if (text.empty() || text.back() != 's') return absl::InvalidArgumentError("bad duration " + text);
  Value v = CallBuiltin("duration", Value::String(text));
  if (v.is_error()) return absl::InvalidArgumentError(v.error().message);
  return v;
}

// Long because: one flat case per value tag of the conformance files; each
// reads on its own and a table of them would say no more.
absl::StatusOr<Value> Decode(const json& j, int depth) {
  if (depth > kMaxValueDepth)
    return absl::InvalidArgumentError(
        StrCat("a value nested more than ", kMaxValueDepth, " levels"));
  if (!j.is_object() || j.size() != 1)
    return absl::InvalidArgumentError("a value is an object with one key");
  const std::string& tag = j.begin().key();
  const json& v = j.begin().value();
  try {
    if (tag == "null") return Value::Null();
    if (tag == "bool") return Value::Bool(v.get<bool>());
    if (tag == "int") return Value::Int(std::stoll(v.get<std::string>()));
    if (tag == "uint") return Value::Uint(std::stoull(v.get<std::string>()));
    if (tag == "double") {
      if (v.is_string()) {
        std::string s = v.get<std::string>();
        if (s == "NaN") return Value::Double(std::nan(""));
        if (s == "Infinity") return Value::Double(INFINITY);
        if (s == "-Infinity") return Value::Double(-INFINITY);
        return absl::InvalidArgumentError("bad double " + s);
      }
      return Value::Double(v.get<double>());
    }
    if (tag == "string") return Value::String(v.get<std::string>());
    if (tag == "bytes_b64") {
      std::string out;
      if (!absl::Base64Unescape(v.get<std::string>(), &out))
        return absl::InvalidArgumentError("bad base64");
      return Value::Bytes(std::move(out));
    }
    if (tag == "type") return Value::Type(v.get<std::string>());
    if (tag == "list") {
      ValueList items;
      for (const json& item : v) {
        auto decoded = Decode(item, depth + 1);
        if (!decoded.ok()) return decoded;
        items.push_back(*std::move(decoded));
      }
      return Value::List(std::move(items));
    }
    if (tag == "map") {
      MapData map;
      for (const json& pair : v) {
        auto key = Decode(pair.at(0), depth + 1);
        if (!key.ok()) return key;
        auto value = Decode(pair.at(1), depth + 1);
        if (!value.ok()) return value;
        map.entries.emplace_back(*std::move(key), *std::move(value));
      }
      return Value::Map(std::move(map));
    }
    if (tag == "duration") return DecodeDuration(v.get<std::string>());
    if (tag == "timestamp") {
      Value t = CallBuiltin("timestamp", Value::String(v.get<std::string>()));
      if (t.is_error()) return absl::InvalidArgumentError(t.error().message);
      return t;
    }
    if (tag == "quantity") {
      auto q = Quantity::Parse(v.get<std::string>());
      if (!q.ok()) return q.status();
      return Value::FromQuantity(*q);
    }
    if (tag == "semver") {
      auto s = Semver::Parse(v.get<std::string>());
      if (!s.ok()) return s.status();
      return Value::FromSemver(*s);
    }
    if (tag == "error_binding") {
      std::string message = v.empty() ? "error" : v.at(0).get<std::string>();
      return Value::Error(message);
    }
    if (tag == "dra_device") {
      std::vector<std::pair<std::string, Value>> attributes, capacity;
      const json attribute_json = v.value("attributes", json::object());
      const json capacity_json = v.value("capacity", json::object());
      for (const auto& [name, value] : attribute_json.items()) {
        auto decoded = Decode(value, depth + 1);
        if (!decoded.ok()) return decoded;
        attributes.emplace_back(name, *std::move(decoded));
      }
      for (const auto& [name, value] : capacity_json.items()) {
        auto decoded = Decode(value, depth + 1);
        if (!decoded.ok()) return decoded;
        capacity.emplace_back(name, *std::move(decoded));
      }
      return MakeDraDevice(v.value("driver", ""), attributes, capacity);
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(StrCat("bad ", tag, " value: ", e.what()));
  }
  return absl::UnimplementedError(StrCat("value kind '", tag, "' is not supported"));
}

// cel-spec's rule: same type, doubles by == (NaN matches NaN, -0.0 only
// -0.0), lists in order, maps as sets of pairs, types by name.
bool SameValue(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kDouble: {
      double x = a.double_value(), y = b.double_value();
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
      return x == y && std::signbit(x) == std::signbit(y);
    }
    case Kind::kList: {
      if (a.list().size() != b.list().size()) return false;
      for (size_t i = 0; i < a.list().size(); ++i) {
        if (!SameValue(a.list()[i], b.list()[i])) return false;
      }
      return true;
    }
    case Kind::kMap: {
      if (a.map().entries.size() != b.map().entries.size()) return false;
      for (const auto& [k, v] : a.map().entries) {
        const Value* other = nullptr;
        for (const auto& [k2, v2] : b.map().entries) {
          if (SameValue(k, k2)) other = &v2;
        }
        if (other == nullptr || !SameValue(v, *other)) return false;
      }
      return true;
    }
    case Kind::kError:
      return true;
    default:
      return Equal(a, b).value_or(false);
  }
}

std::string Describe(const Value& v) {
  if (v.is_error()) return StrCat("error: ", v.error().message);
  return StrCat(v.DebugString(), " (", v.TypeName(), ")");
}

// Parses one line of a case file into a JSON object with "expr" and
// "expect".
absl::StatusOr<json> ParseConformanceCase(const std::string& line) {
  // JSON deeper than any value Decode() accepts is cut off while parsing:
  // nlohmann's parser is iterative, but copying a deep tree recurses (20,000
  // levels overflowed the stack under ASan).
  bool too_deep = false;
  auto limit_depth = [&](int depth, json::parse_event_t, json&) {
    if (depth > kMaxJsonDepth) too_deep = true;
    return !too_deep;
  };
  json c = json::parse(line, limit_depth, /*allow_exceptions=*/false);
  if (too_deep) {
    return absl::InvalidArgumentError(
        StrCat("a value nested more than ", kMaxValueDepth, " levels"));
  }
  if (c.is_discarded() || !c.is_object() || !c.contains("expr") || !c.contains("expect")) {
    return absl::InvalidArgumentError("not a conformance case (needs \"expr\" and \"expect\")");
  }
  return c;
}

// What running a case's expression gave, and whether that is what the case
// expects.
struct ConformanceOutcome {
  bool pass = false;
  std::string actual;
};

ConformanceOutcome EvaluateConformanceCase(const Env& env, const std::string& expr,
                                           const std::vector<Value>& variables, bool dra,
                                           const std::optional<Value>& expected, bool want_error,
                                           bool want_compile_error) {
  ConformanceOutcome outcome;
  auto program = env.Compile(expr);
  if (!program.ok()) {
    outcome.actual = StrCat("compile error: ", program.status().message());
    // cel-spec cases do not separate check errors from evaluation errors;
    // DRA cases do (a compile error rejects the claim, a runtime error
    // aborts scheduling).
    outcome.pass = want_compile_error || (want_error && !dra);
    return outcome;
  }
  Value v = program->Evaluate(variables);
  if (dra && !v.is_error() && v.kind() != Kind::kBool) {
    v = Value::Error(
        StrCat("CEL result of type ", v.TypeName(), " could not be converted to bool"));
  }
  outcome.actual = v.is_error() ? StrCat("error: ", program->DescribeError(v)) : Describe(v);
  if (v.is_error())
    outcome.pass = want_error;
  else
    outcome.pass = expected.has_value() && SameValue(v, *expected);
  return outcome;
}

}  // namespace

absl::Status RunConformanceLine(const std::string& line, ConformanceFileResult* result) {
  ASSIGN_OR_RETURN(const json c, ParseConformanceCase(line));
  const json& expect = c["expect"];
  std::string file = c.value("file", "");
  bool dra = file == "dra";
  auto skip = [&] {
    ++result->skipped;
    return absl::OkStatus();
  };
  if (!c.value("skip_reason", json()).is_null() || expect.contains("unknown") ||
      expect.contains("check_only")) {
    return skip();
  }
  EnvOptions options;
  options.type_check = !c.value("disabled_check", false);
  options.container = c.value("container", "");
  options.kubernetes = dra;
  options.dra_selector = dra;
  options.parse.enable_macros = !c.value("disable_macros", false);
  Env env = dra ? Env::DraSelector() : Env(options);
  if (!dra) {
    for (const json& decl : c.value("type_env", json::array())) {
      if (decl.contains("function")) return skip();  // needs declared functions
      auto type = Type::Parse(decl.value("ident", "dyn"));
      if (!type.ok()) return skip();
      env.Declare(decl.value("name", ""), *type);
    }
  }
  std::vector<Value> variables(env.declarations().size(), Value::Error("unbound variable"));
  const json bindings = c.value("bindings", json::object());
  for (const auto& [name, encoded] : bindings.items()) {
    if (encoded.contains("unknown_binding")) return skip();
    auto value = Decode(encoded);
    if (!value.ok()) {
      if (absl::IsUnimplemented(value.status())) return skip();
      return value.status();
    }
    int slot = env.Find(name);
    if (slot < 0) {
      slot = env.Declare(name, Type::Dyn());
      variables.resize(env.declarations().size(), Value::Error("unbound variable"));
    }
    variables[slot] = *std::move(value);
  }
  std::optional<Value> expected;
  if (expect.contains("value")) {
    auto value = Decode(expect["value"]);
    if (!value.ok()) {
      if (absl::IsUnimplemented(value.status())) return skip();
      return value.status();
    }
    expected = *std::move(value);
  }
  bool want_error = expect.value("error", false);
  bool want_compile_error = expect.value("compile_error", false);

  std::string expr = c["expr"].get<std::string>();
  ConformanceOutcome outcome =
      EvaluateConformanceCase(env, expr, variables, dra, expected, want_error, want_compile_error);
  if (outcome.pass) {
    ++result->passed;
    return absl::OkStatus();
  }
  ++result->failed;
  ConformanceFailure failure;
  failure.id = StrCat(file, "/", c.value("section", ""), "/", c.value("name", ""));
  failure.expr = expr;
  failure.expected = want_compile_error ? "compile error"
                     : want_error       ? "evaluation error"
                     : expected         ? Describe(*expected)
                                        : expect.dump();
  failure.actual = std::move(outcome.actual);
  failure.unsure = c.value("unsure", false);
  result->failures.push_back(std::move(failure));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadCaseFile(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return absl::NotFoundError(StrCat(path, ": cannot open"));
  if (!fs::is_regular_file(status)) {
    return absl::InvalidArgumentError(StrCat(path, ": not a regular file"));
  }
  const auto too_big = [&path] {
    return absl::InvalidArgumentError(
        StrCat(path, ": more than ", kMaxCaseFileBytes >> 20, " MiB, too big for a case file"));
  };
  if (fs::file_size(path, ec) > kMaxCaseFileBytes) return too_big();
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat(path, ": cannot open"));
  // In pieces, and never past the limit: the file may grow while it is read.
  std::string content;
  char buffer[1 << 16];
  while (content.size() <= kMaxCaseFileBytes && in.read(buffer, sizeof buffer).gcount() > 0) {
    content.append(buffer, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return absl::InvalidArgumentError(StrCat(path, ": read failed"));
  if (content.size() > kMaxCaseFileBytes) return too_big();
  return content;
}

absl::StatusOr<ConformanceFileResult> RunConformanceFile(const std::string& path) {
  absl::StatusOr<std::string> content = ReadCaseFile(path);
  if (!content.ok()) return content.status();
  ConformanceFileResult result;
  result.path = path;
  int number = 0;
  for (std::string_view line : Split(*content, '\n')) {
    ++number;
    if (Trim(line).empty()) continue;
    absl::Status status = RunConformanceLine(std::string(line), &result);
    if (!status.ok())
      return absl::InvalidArgumentError(StrCat(path, ":", number, ": ", status.message()));
  }
  return result;
}

}  // namespace canhazgpu::cel
