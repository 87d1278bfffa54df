#include "config/config_file.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/strings.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"
#define TOML_EXCEPTIONS 0
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

// ---- YAML ----

absl::Status FlattenYaml(const std::string& path, const YAML::Node& node, const std::string& prefix,
                         ConfigFile& out) {
  for (const auto& item : node) {
    const std::string key = Dotted(prefix, item.first.as<std::string>());
    const YAML::Node& value = item.second;
    const int line = value.Mark().line + 1;
    switch (value.Type()) {
      case YAML::NodeType::Map:
        if (absl::Status s = FlattenYaml(path, value, key, out); !s.ok()) return s;
        break;
      case YAML::NodeType::Scalar:
        out.values[key] = {.text = value.Scalar(), .line = line};
        break;
      case YAML::NodeType::Sequence: {
        ConfigValue list{.is_list = true, .line = line};
        for (const auto& element : value) {
          if (!element.IsScalar())
            return ErrorAt(path, line, StrCat(key, ": expected a list of values"));
          list.list.push_back(element.Scalar());
        }
        out.values[key] = std::move(list);
        break;
      }
      default:
        return ErrorAt(path, item.first.Mark().line + 1, StrCat(key, ": no value"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseYaml(const std::string& path, const std::string& text, ConfigFile& out) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return ErrorAt(path, e.mark.line + 1, e.msg);
  }
  if (root.IsNull()) return absl::OkStatus();  // an empty file
  if (!root.IsMap()) return ErrorAt(path, root.Mark().line + 1, "expected a map of settings");
  try {
    return FlattenYaml(path, root, "", out);
  } catch (const YAML::Exception& e) {
    return ErrorAt(path, e.mark.line + 1, e.msg);
  }
}

// ---- JSON ----

// nlohmann::json keeps no positions; the line of a key is that of its first
// quoted occurrence after the parent's, which is exact for every file that
// does not repeat a key name inside a string.
class JsonLines {
 public:
  explicit JsonLines(const std::string& text) : text_(text) {}
  int Find(const std::string& key, size_t* from) const {
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

absl::Status FlattenJson(const std::string& path, const nlohmann::json& object,
                         const std::string& prefix, const JsonLines& lines, size_t from,
                         ConfigFile& out) {
  for (const auto& [name, value] : object.items()) {
    const std::string key = Dotted(prefix, name);
    size_t at = from;
    const int line = lines.Find(name, &at);
    if (value.is_object()) {
      if (absl::Status s = FlattenJson(path, value, key, lines, at, out); !s.ok()) return s;
    } else if (value.is_array()) {
      ConfigValue list{.is_list = true, .line = line};
      for (const auto& element : value) {
        if (element.is_structured() || element.is_null()) {
          return ErrorAt(path, line, StrCat(key, ": expected a list of values"));
        }
        list.list.push_back(JsonScalar(element));
      }
      out.values[key] = std::move(list);
    } else if (value.is_null()) {
      return ErrorAt(path, line, StrCat(key, ": no value"));
    } else {
      out.values[key] = {.text = JsonScalar(value), .line = line};
    }
  }
  return absl::OkStatus();
}

absl::Status ParseJson(const std::string& path, const std::string& text, ConfigFile& out) {
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
    }
  }
  if (!root.is_object()) return ErrorAt(path, 1, "expected an object of settings");
  return FlattenJson(path, root, "", JsonLines(text), 0, out);
}

// ---- TOML ----

// A TOML scalar as text; dates and times are not settings of ours.
std::optional<std::string> TomlScalar(const toml::node& node) {
  if (auto v = node.value_exact<std::string>()) return *v;
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
                         const std::string& prefix, ConfigFile& out) {
  for (const auto& [name, node] : table) {
    const std::string key = Dotted(prefix, std::string(name.str()));
    const int line = static_cast<int>(node.source().begin.line);
    if (const toml::table* sub = node.as_table()) {
      if (absl::Status s = FlattenToml(path, *sub, key, out); !s.ok()) return s;
    } else if (const toml::array* array = node.as_array()) {
      ConfigValue list{.is_list = true, .line = line};
      for (const toml::node& element : *array) {
        std::optional<std::string> text = TomlScalar(element);
        if (!text) return ErrorAt(path, line, StrCat(key, ": expected a list of values"));
        list.list.push_back(*text);
      }
      out.values[key] = std::move(list);
    } else if (std::optional<std::string> text = TomlScalar(node)) {
      out.values[key] = {.text = *text, .line = line};
    } else {
      return ErrorAt(path, line, StrCat(key, ": unsupported value (use a string)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseToml(const std::string& path, const std::string& text, ConfigFile& out) {
  toml::parse_result result = toml::parse(text, path);
  if (!result) {
    const toml::parse_error& e = result.error();
    return ErrorAt(path, static_cast<int>(e.source().begin.line), std::string(e.description()));
  }
  return FlattenToml(path, result.table(), "", out);
}

}  // namespace

absl::StatusOr<ConfigFile> ParseConfigText(const std::string& path, const std::string& text) {
  ConfigFile out{.path = path};
  absl::Status status;
  if (path.ends_with(".yaml") || path.ends_with(".yml")) {
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
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat("cannot read config file ", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InternalError(StrCat("cannot read config file ", path));
  return ParseConfigText(path, text.str());
}

}  // namespace canhazgpu::config
