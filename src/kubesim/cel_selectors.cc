#include "kubesim/cel_selectors.h"

#include <functional>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "cel/program.h"
#include "core/strings.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

// CELSelectorExpressionMaxLength.
constexpr size_t kMaxExpressionBytes = 10 * 1024;

// Calls `use(field path, expression)` for every CEL selector in `object`.
void ForEachSelector(const ResourceType& type, const json& object,
                     const std::function<void(const std::string&, const std::string&)>& use) {
  auto selectors = [&](const json& list, const std::string& path) {
    if (!list.is_array()) return;
    for (size_t i = 0; i < list.size(); ++i) {
      const json expression = list[i].value("/cel/expression"_json_pointer, json());
      if (expression.is_string()) {
        use(StrCat(path, "[", i, "].cel.expression"), expression.get<std::string>());
      }
    }
  };
  auto claim_spec = [&](const json& spec, const std::string& path) {
    const json requests = spec.value("/devices/requests"_json_pointer, json::array());
    if (!requests.is_array()) return;
    for (size_t i = 0; i < requests.size(); ++i) {
      const std::string request = StrCat(path, ".devices.requests[", i, "]");
      selectors(requests[i].value("/exactly/selectors"_json_pointer, json()),
                request + ".exactly.selectors");
      const json alternatives = requests[i].value("firstAvailable", json());
      if (!alternatives.is_array()) continue;
      for (size_t k = 0; k < alternatives.size(); ++k) {
        selectors(alternatives[k].value("selectors", json()),
                  StrCat(request, ".firstAvailable[", k, "].selectors"));
      }
    }
  };
  const json spec = object.value("spec", json::object());
  if (!spec.is_object()) return;
  if (type.kind == "DeviceClass") {
    selectors(spec.value("selectors", json()), "spec.selectors");
  } else if (type.kind == "ResourceClaim") {
    claim_spec(spec, "spec");
  } else if (type.kind == "ResourceClaimTemplate") {
    claim_spec(spec.value("spec", json::object()), "spec.spec");
  }
}

// cel-go's report: "ERROR: <input>:LINE:COLUMN: message", then the line and
// a caret under the column. `error` is our compiler's "LINE:COLUMN: message".
std::string CelGoReport(const std::string& expression, const std::string& error) {
  std::vector<std::string> parts = absl::StrSplit(error, absl::MaxSplits(':', 2));
  int line = 0, column = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &line) ||
      !absl::SimpleAtoi(parts[1], &column) || line < 1 || column < 1) {
    return StrCat("ERROR: <input>: ", error);
  }
  std::string report = StrCat("ERROR: <input>:", line, ":", column, ":", parts[2]);
  std::vector<std::string> lines = absl::StrSplit(expression, '\n');
  if (static_cast<size_t>(line) <= lines.size()) {
    report += StrCat("\n | ", lines[line - 1], "\n | ", std::string(column - 1, '.'), "^");
  }
  return report;
}

}  // namespace

std::vector<kube::StatusCause> CheckCelSelectors(const ResourceType& type, const json& object,
                                                 const json* old) {
  if (type.group != "resource.k8s.io") return {};
  std::set<std::string> stored;
  if (old != nullptr) {
    ForEachSelector(type, *old, [&](const std::string&, const std::string& expression) {
      stored.insert(expression);
    });
  }
  static const cel::Env* const env = new cel::Env(cel::Env::DraSelector());
  std::vector<kube::StatusCause> causes;
  ForEachSelector(type, object, [&](const std::string& field, const std::string& expression) {
    // Too long is its own cause (kube::CheckSelectors), as on the server.
    if (stored.contains(expression) || expression.size() > kMaxExpressionBytes) return;
    absl::StatusOr<cel::Program> program = env->Compile(expression);
    if (program.ok()) return;
    causes.push_back({"FieldValueInvalid",
                      StrCat("Invalid value: ", json(expression).dump(), ": compilation failed: ",
                             CelGoReport(expression, std::string(program.status().message()))),
                      field});
  });
  return causes;
}

}  // namespace canhazgpu::kubesim
