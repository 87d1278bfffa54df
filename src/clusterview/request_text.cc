// DescribeRequest and SelectorTopic (explain.h): a claim's request in the
// words of an explanation.
#include <algorithm>
#include <cctype>

#include "cel/program.h"
#include "clusterview/explain.h"
#include "core/strings.h"

namespace canhazgpu::clusterview {

using nlohmann::json;

std::string DescribeRequest(const json& request) {
  auto one = [](const json& r) {
    const std::string cls = r.value("deviceClassName", "");
    std::string out = r.value("allocationMode", "") == "All"
                          ? StrCat("all ", cls)
                          : StrCat(r.value("count", 1), " x ", cls);
    // A share: "1 x gpu.canhazgpu.dev with memory 10Gi".
    std::vector<std::string> amounts;
    json capacity = r.value("/capacity/requests"_json_pointer, json::object());
    if (!capacity.is_object()) capacity = json::object();
    for (const auto& [name, amount] : capacity.items())
      if (amount.is_string()) amounts.push_back(StrCat(name, " ", amount.get<std::string>()));
    if (!amounts.empty()) out += StrCat(" with ", Join(amounts, ", "));
    std::vector<std::string> topics;
    for (const json& s : r.value("selectors", json::array())) {
      const std::string e = s.value("/cel/expression"_json_pointer, std::string());
      if (!e.empty()) topics.push_back(SelectorTopic(e));
    }
    if (!topics.empty()) out += StrCat(" where ", Join(topics, "; "));
    return out;
  };
  if (request.contains("firstAvailable")) {
    std::vector<std::string> alternatives;
    for (const json& s : request.value("firstAvailable", json::array()))
      alternatives.push_back(one(s));
    return StrCat("first of: ", Join(alternatives, " | "));
  }
  return one(request.value("exactly", json::object()));
}

std::string SelectorTopic(const std::string& expression) {
  std::vector<std::string> names;
  auto note = [&](std::string name) {
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(std::move(name));
  };
  for (const char* map : {"attributes[", "capacity["}) {
    size_t at = 0;
    while ((at = expression.find(map, at)) != std::string::npos) {
      at = expression.find(']', at);
      if (at == std::string::npos) break;
      size_t p = at + 1;
      if (p < expression.size() && expression[p] == '.') {
        size_t end = p + 1;
        while (
            end < expression.size() &&
            (std::isalnum(static_cast<unsigned char>(expression[end])) || expression[end] == '_'))
          ++end;
        note(expression.substr(p + 1, end - p - 1));
      }
    }
  }
  if (expression.find("device.driver") != std::string::npos) note("driver");
  if (!names.empty()) return Join(names, ", ");
  return cel::Excerpt(expression, 0, 40);
}

}  // namespace canhazgpu::clusterview
