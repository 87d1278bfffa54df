#include "cli/common/yaml_output.h"

#include "core/json_text.h"
#include "core/strings.h"
#include "yaml-cpp/yaml.h"

namespace canhazgpu::cli {
namespace {

void EmitYaml(YAML::Emitter& out, const nlohmann::ordered_json& j) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [key, value] : j.items()) {
      out << YAML::Key << key << YAML::Value;
      EmitYaml(out, value);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& value : j) EmitYaml(out, value);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    out << YAML::DoubleQuoted << j.get<std::string>();
  } else if (j.is_boolean()) {
    out << j.get<bool>();
  } else if (j.is_number_integer()) {
    out << j.get<int64_t>();
  } else if (j.is_null()) {
    out << YAML::Null;
  } else {
    out << DumpJson(j);
  }
}

}  // namespace

std::string ToYaml(nlohmann::ordered_json document) {
  MakeValidUtf8(document);
  YAML::Emitter emitter;
  EmitYaml(emitter, document);
  return StrCat(emitter.c_str(), "\n");
}

}  // namespace canhazgpu::cli
