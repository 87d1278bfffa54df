#include "config/config_file.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "config/prescan.h"
#include "config/toml_shield.h"
#include "core/file_read.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"
#include "yaml/yaml_json.h"
#define TOML_EXCEPTIONS 0
// toml++ 3.3 asserts (built without NDEBUG) or assumes (built by clang with
// NDEBUG) what its parser then checks and reports anyway: "[\n" trips
// parse_key's assertion in a Debug build (config_fuzzer in the ASan tree)
// and is undefined behaviour under clang -O2. Our GCC release binaries do
// neither and give the parser's one-line error; every build does the same.
#include "toml++/impl/preprocessor.h"
#undef TOML_ASSERT_ASSUME
#define TOML_ASSERT_ASSUME(expr) static_cast<void>(0)
#include "toml++/toml.h"

namespace canhazgpu::config {
namespace {

absl::Status ErrorAt(const std::string& path, int line, const std::string& message) {
  return absl::InvalidArgumentError(line > 0 ? StrCat(path, ":", line, ": ", message)
                                             : StrCat(path, ": ", message));
}

std::string Dotted(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : StrCat(prefix, ".", key);
}

absl::Status TooDeep(const std::string& path, int line) {
  return ErrorAt(path, line, StrCat("settings nested deeper than ", kMaxConfigDepth, " levels"));
}

// What flattening one file may still produce. YAML aliases let a small file
// name the same subtree many times ("billion laughs"); every visit counts,
// so expansion stops at the bound instead of at the end of memory.
class Budget {
 public:
  explicit Budget(const std::string& path) : path_(path) {}

  // One key of a table, at `depth` (1 at the top).
  absl::Status Key(int depth, int line) {
    if (depth > kMaxConfigDepth) return TooDeep(path_, line);
    if (++settings_ > kMaxConfigSettings) {
      return ErrorAt(path_, 0, StrCat("more than ", kMaxConfigSettings, " settings"));
    }
    return Value();
  }
  // One scalar or list element.
  absl::Status Value() {
    if (++values_ > kMaxConfigValues) {
      return ErrorAt(path_, 0, StrCat("more than ", kMaxConfigValues, " values"));
    }
    return absl::OkStatus();
  }

 private:
  const std::string& path_;
  int settings_ = 0;
  int values_ = 0;
};

// A NUL would end the text early wherever it is handed on as a C string (a
// note, a selector), silently changing the setting; no setting needs one.
absl::Status CheckNoNul(const std::string& path, int line, const std::string& key,
                        const std::string& text) {
  if (key.find('\0') == std::string::npos && text.find('\0') == std::string::npos) {
    return absl::OkStatus();
  }
  // The key itself may hold the NUL; print it with the NUL shown as \0.
  std::string shown = key;
  for (size_t at = shown.find('\0'); at != std::string::npos; at = shown.find('\0', at)) {
    shown.replace(at, 1, "\\0");
  }
  return ErrorAt(path, line, StrCat(shown, ": contains a NUL byte"));
}

// Records one scalar setting after the checks every format shares.
absl::Status Put(const std::string& path, const std::string& key, ConfigValue value,
                 ConfigFile& out) {
  RETURN_IF_ERROR(CheckNoNul(path, value.line, key, value.text));
  for (const std::string& element : value.list) {
    RETURN_IF_ERROR(CheckNoNul(path, value.line, key, element));
  }
  out.values[key] = std::move(value);
  return absl::OkStatus();
}

// ---- JSON ----

// Where a setting's value starts: a YAML document records it by JSON
// pointer; JSON text is searched.
class KeyLines {
 public:
  virtual ~KeyLines() = default;
  // The line of key `name` at `pointer`; `*from` is where the parent was
  // found in the text and becomes where this key was.
  virtual int Find(const std::string& pointer, const std::string& name, size_t* from) const = 0;
};

class YamlLines : public KeyLines {
 public:
  explicit YamlLines(const yaml::Document& document) : document_(document) {}
  int Find(const std::string& pointer, const std::string&, size_t*) const override {
    return document_.LineOf(pointer);
  }

 private:
  const yaml::Document& document_;
};

// nlohmann::json keeps no positions; the line of a key is that of its first
// quoted occurrence after the parent's, which is exact for every file that
// does not repeat a key name inside a string.
class JsonLines : public KeyLines {
 public:
  explicit JsonLines(const std::string& text) : text_(text) {}
  int Find(const std::string&, const std::string& key, size_t* from) const override {
    size_t at = text_.find(StrCat("\"", key, "\""), *from);
    if (at == std::string::npos) return 0;
    *from = at;
    return 1 +
           static_cast<int>(std::count(text_.begin(), text_.begin() + static_cast<long>(at), '\n'));
  }

 private:
  const std::string& text_;
};

std::string JsonScalar(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// One object of settings at JSON pointer `pointer`, from a JSON file or a
// YAML one read as JSON.
absl::Status FlattenJson(const std::string& path, const nlohmann::json& object,
                         const std::string& pointer, const std::string& prefix,
                         const KeyLines& lines, size_t from, int depth, Budget& budget,
                         ConfigFile& out) {
  for (const auto& [name, value] : object.items()) {
    const std::string key = Dotted(prefix, name);
    const std::string at_pointer = StrCat(pointer, "/", yaml::PointerToken(name));
    size_t at = from;
    const int line = lines.Find(at_pointer, name, &at);
    RETURN_IF_ERROR(budget.Key(depth, line));
    if (value.is_object()) {
      RETURN_IF_ERROR(FlattenJson(path, value, at_pointer, key, lines, at, depth + 1, budget, out));
    } else if (value.is_array()) {
      ConfigValue list{.is_list = true, .line = line};
      for (const auto& element : value) {
        RETURN_IF_ERROR(budget.Value());
        if (element.is_structured() || element.is_null()) {
          return ErrorAt(path, line, StrCat(key, ": expected a list of values"));
        }
        list.list.push_back(JsonScalar(element));
      }
      RETURN_IF_ERROR(Put(path, key, std::move(list), out));
    } else if (value.is_null()) {
      return ErrorAt(path, line, StrCat(key, ": no value"));
    } else {
      RETURN_IF_ERROR(Put(path, key, {.text = JsonScalar(value), .line = line}, out));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseJson(const std::string& path, const std::string& text, ConfigFile& out) {
  if (int line = JsonTooDeepAt(text, kMaxConfigDepth); line > 0) return TooDeep(path, line);
  nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    // Re-parse for the position of the first error.
    try {
      nlohmann::json ignored = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      size_t byte = std::min(e.byte, text.size());
      int line = 1 + static_cast<int>(
                         std::count(text.begin(), text.begin() + static_cast<long>(byte), '\n'));
      std::string what = e.what();
      size_t colon = what.rfind(": ");
      return ErrorAt(path, line, colon == std::string::npos ? what : what.substr(colon + 2));
    } catch (const nlohmann::json::exception& e) {
      // A number too large for a double (1E400) is out_of_range, which
      // carries no position. Found by config_fuzzer.
      std::string what = e.what();
      size_t colon = what.rfind("] ");
      return ErrorAt(path, 0, colon == std::string::npos ? what : what.substr(colon + 2));
    }
  }
  if (!root.is_object()) return ErrorAt(path, 1, "expected an object of settings");
  Budget budget(path);
  return FlattenJson(path, root, "", "", JsonLines(text), 0, 1, budget, out);
}

// ---- YAML ----

absl::Status ParseYaml(const std::string& path, const std::string& text, ConfigFile& out) {
  yaml::ReadError error;
  absl::StatusOr<yaml::Document> document = yaml::ReadDocument(text,
                                                               {.scalars_as_text = true,
                                                                .record_lines = true,
                                                                .max_depth = kMaxConfigDepth,
                                                                .max_values = kMaxConfigValues},
                                                               &error);
  if (!document.ok()) return ErrorAt(path, error.line, error.message);
  if (document->value.is_null()) return absl::OkStatus();  // an empty file
  if (!document->value.is_object()) {
    return ErrorAt(path, document->LineOf(""), "expected a map of settings");
  }
  Budget budget(path);
  return FlattenJson(path, document->value, "", "", YamlLines(*document), 0, 1, budget, out);
}

// ---- TOML ----

// A TOML scalar as text; dates and times are not settings of ours.
std::optional<std::string> TomlScalar(const toml::node& node) {
  if (auto v = node.value_exact<std::string>()) return UnshieldTomlText(*v);
  if (auto v = node.value_exact<int64_t>()) return std::to_string(*v);
  if (auto v = node.value_exact<bool>()) return std::string(*v ? "true" : "false");
  if (auto v = node.value_exact<double>()) {
    std::ostringstream s;
    s << *v;
    return s.str();
  }
  return std::nullopt;
}

absl::Status FlattenToml(const std::string& path, const toml::table& table,
                         const std::string& prefix, int depth, Budget& budget, ConfigFile& out) {
  for (const auto& [name, node] : table) {
    const int line = static_cast<int>(node.source().begin.line);
    RETURN_IF_ERROR(budget.Key(depth, line));
    const std::string key = Dotted(prefix, UnshieldTomlText(name.str()));
    if (const toml::table* sub = node.as_table()) {
      RETURN_IF_ERROR(FlattenToml(path, *sub, key, depth + 1, budget, out));
    } else if (const toml::array* array = node.as_array()) {
      ConfigValue list{.is_list = true, .line = line};
      for (const toml::node& element : *array) {
        RETURN_IF_ERROR(budget.Value());
        std::optional<std::string> text = TomlScalar(element);
        if (!text) return ErrorAt(path, line, StrCat(key, ": expected a list of values"));
        list.list.push_back(*text);
      }
      RETURN_IF_ERROR(Put(path, key, std::move(list), out));
    } else if (std::optional<std::string> text = TomlScalar(node)) {
      RETURN_IF_ERROR(Put(path, key, {.text = *text, .line = line}, out));
    } else {
      return ErrorAt(path, line, StrCat(key, ": unsupported value (use a string)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseToml(const std::string& path, const std::string& text, ConfigFile& out) {
  if (int line = TomlTooDeepAt(text, kMaxConfigDepth); line > 0) return TooDeep(path, line);
  ASSIGN_OR_RETURN(const std::string shielded, ShieldTomlText(path, text));
  toml::parse_result result = toml::parse(shielded, path);
  if (!result) {
    const toml::parse_error& e = result.error();
    return ErrorAt(path, static_cast<int>(e.source().begin.line),
                   UnshieldTomlText(e.description()));
  }
  Budget budget(path);
  return FlattenToml(path, result.table(), "", 1, budget, out);
}

}  // namespace

absl::StatusOr<ConfigFile> ParseConfigText(const std::string& path, const std::string& text) {
  ConfigFile out{.path = path};
  absl::Status status;
  // The Go tool read an extensionless ~/.canhazgpu as YAML.
  const bool bare_dotfile = path == ".canhazgpu" || path.ends_with("/.canhazgpu");
  if (path.ends_with(".yaml") || path.ends_with(".yml") || bare_dotfile) {
    status = ParseYaml(path, text, out);
  } else if (path.ends_with(".json")) {
    status = ParseJson(path, text, out);
  } else if (path.ends_with(".toml")) {
    status = ParseToml(path, text, out);
  } else {
    return absl::InvalidArgumentError(
        StrCat(path, ": unknown config format; name it .yaml, .yml, .json or .toml"));
  }
  if (!status.ok()) return status;
  return out;
}

absl::StatusOr<ConfigFile> LoadConfigFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadRegularFile(path, kMaxConfigFileBytes, "config file"));
  return ParseConfigText(path, text);
}

}  // namespace canhazgpu::config
