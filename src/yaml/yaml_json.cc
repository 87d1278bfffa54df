#include "yaml/yaml_json.h"

#include <cctype>

#include "core/strings.h"
#include "yaml-cpp/yaml.h"

namespace canhazgpu::yaml {
namespace {

using nlohmann::json;

int LineOf(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.line + 1; }

// A bound crossed or a malformed node; carried out of the recursion.
struct Refusal {
  ReadError error;
};

json TypedScalar(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted: always a string
  if (s == "true" || s == "True") return true;
  if (s == "false" || s == "False") return false;
  if (s == "null" || s == "~") return nullptr;
  int64_t i;
  if (YAML::convert<int64_t>::decode(node, i)) return i;
  double d;
  if (s.find_first_of("0123456789") != std::string::npos &&
      YAML::convert<double>::decode(node, d)) {
    return d;
  }
  return s;
}

class Converter {
 public:
  Converter(const ReadOptions& options, Document* lines_to)
      : options_(options), lines_to_(lines_to) {}

  // `node` at `pointer`, `depth` keys and indices below the root; `line` is
  // where its key starts (for a null value, which has no position).
  json Convert(const YAML::Node& node, const std::string& pointer, int depth, int key_line) {
    const int line = node.IsNull() || LineOf(node.Mark()) == 0 ? key_line : LineOf(node.Mark());
    if (depth > options_.max_depth) {
      throw Refusal{{line, StrCat("nested deeper than ", options_.max_depth, " levels")}};
    }
    if (++values_ > options_.max_values) {
      throw Refusal{{0, StrCat("more than ", options_.max_values, " values")}};
    }
    if (options_.record_lines && lines_to_ != nullptr) lines_to_->lines[pointer] = line;
    switch (node.Type()) {
      case YAML::NodeType::Map: {
        json out = json::object();
        for (const auto& kv : node) {
          if (!kv.first.IsScalar()) {
            throw Refusal{{LineOf(kv.first.Mark()), "a key must be a single value"}};
          }
          const std::string& key = kv.first.Scalar();
          out[key] = Convert(kv.second, StrCat(pointer, "/", PointerToken(key)), depth + 1,
                             LineOf(kv.first.Mark()));
        }
        return out;
      }
      case YAML::NodeType::Sequence: {
        json out = json::array();
        for (const auto& element : node) {
          out.push_back(Convert(element, StrCat(pointer, "/", out.size()), depth + 1, line));
        }
        return out;
      }
      case YAML::NodeType::Scalar:
        return options_.scalars_as_text ? json(node.Scalar()) : TypedScalar(node);
      default:
        return nullptr;
    }
  }

 private:
  const ReadOptions& options_;
  Document* lines_to_;
  int64_t values_ = 0;
};

absl::Status Failed(const ReadError& what, ReadError* error) {
  if (error != nullptr) *error = what;
  if (what.line == 0) return absl::InvalidArgumentError(what.message);
  return absl::InvalidArgumentError(StrCat("line ", what.line, ": ", what.message));
}

}  // namespace

int Document::LineOf(const std::string& pointer) const {
  auto it = lines.find(pointer);
  return it == lines.end() ? 0 : it->second;
}

std::optional<bool> BoolOf(std::string_view text) {
  static constexpr std::string_view kTrue[] = {"y", "yes", "true", "on"};
  static constexpr std::string_view kFalse[] = {"n", "no", "false", "off"};
  // yaml-cpp accepts each word in lower case, with a capital, or all capitals.
  auto is = [text](std::string_view word) {
    if (text.size() != word.size() || text.empty()) return false;
    std::string lower(text), title(word), upper(word);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower != word) return false;
    title[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(title[0])));
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return text == word || text == title || text == upper;
  };
  for (std::string_view word : kTrue) {
    if (is(word)) return true;
  }
  for (std::string_view word : kFalse) {
    if (is(word)) return false;
  }
  return std::nullopt;
}

std::string PointerToken(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

absl::StatusOr<Document> ReadDocument(std::string_view text, const ReadOptions& options,
                                      ReadError* error) {
  Document document;
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    document.value = Converter(options, &document).Convert(root, "", 0, 1);
  } catch (const YAML::Exception& e) {
    return Failed({LineOf(e.mark), e.msg}, error);
  } catch (const Refusal& refusal) {
    return Failed(refusal.error, error);
  }
  return document;
}

absl::StatusOr<json> ToJson(std::string_view text, const ReadOptions& options) {
  absl::StatusOr<Document> document = ReadDocument(text, options);
  if (!document.ok()) return document.status();
  return std::move(document->value);
}

absl::StatusOr<std::vector<json>> DocumentsToJson(std::string_view text,
                                                  const ReadOptions& options) {
  std::vector<json> documents;
  try {
    Converter converter(options, nullptr);
    for (const YAML::Node& node : YAML::LoadAll(std::string(text))) {
      json document = converter.Convert(node, "", 0, 1);
      if (!document.is_null()) documents.push_back(std::move(document));
    }
  } catch (const YAML::Exception& e) {
    return Failed({LineOf(e.mark), e.msg}, nullptr);
  } catch (const Refusal& refusal) {
    return Failed(refusal.error, nullptr);
  }
  return documents;
}

}  // namespace canhazgpu::yaml
