#include "kube/label_selector.h"

#include "core/strings.h"

namespace canhazgpu::kube {
namespace {

using nlohmann::json;

// The string member `key` of `object`; nullptr when absent or not a string.
const std::string* StringMember(const json& object, const std::string& key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return nullptr;
  return it->get_ptr<const std::string*>();
}

std::string SelectorString(const json& object, const char* key) {
  const std::string* value = StringMember(object, key);
  return value != nullptr ? *value : "";
}

bool HasString(const json& values, const std::string& value) {
  for (const json& v : values)
    if (v.is_string() && v.get<std::string>() == value) return true;
  return false;
}

bool ExpressionHolds(const json& expression, const json& labels) {
  const std::string op = SelectorString(expression, "operator");
  const std::string* value = StringMember(labels, SelectorString(expression, "key"));
  const json values = expression.value("values", json::array());
  if (op == "Exists") return value != nullptr;
  if (op == "DoesNotExist") return value == nullptr;
  if (!values.is_array() || values.empty()) return false;
  if (op == "In") return value != nullptr && HasString(values, *value);
  if (op == "NotIn") return value == nullptr || !HasString(values, *value);
  return false;
}

}  // namespace

bool SelectsLabels(const json& selector, const json& labels) {
  if (!selector.is_object()) return false;
  const json match_labels = selector.value("matchLabels", json::object());
  if (match_labels.is_object()) {
    for (const auto& [key, want] : match_labels.items()) {
      const std::string* value = StringMember(labels, key);
      if (value == nullptr || !want.is_string() || *value != want.get<std::string>()) return false;
    }
  }
  const json expressions = selector.value("matchExpressions", json::array());
  if (!expressions.is_array()) return false;
  for (const json& e : expressions)
    if (!ExpressionHolds(e, labels)) return false;
  return true;
}

std::string LabelSelectorText(const json& selector) {
  std::string out;
  auto add = [&](const std::string& part) { out += StrCat(out.empty() ? "" : ",", part); };
  if (!selector.is_object()) return out;
  const json match_labels = selector.value("matchLabels", json::object());
  for (const auto& [key, value] : match_labels.items())
    add(StrCat(key, "=", value.is_string() ? value.get<std::string>() : value.dump()));
  for (const json& e : selector.value("matchExpressions", json::array())) {
    const std::string key = SelectorString(e, "key");
    const std::string op = SelectorString(e, "operator");
    if (op == "Exists") {
      add(key);
    } else if (op == "DoesNotExist") {
      add("!" + key);
    } else {
      std::string values;
      for (const json& v : e.value("values", json::array()))
        values += StrCat(values.empty() ? "" : ",", v.is_string() ? v.get<std::string>() : "");
      add(StrCat(key, op == "In" ? " in (" : " notin (", values, ")"));
    }
  }
  return out;
}

}  // namespace canhazgpu::kube
