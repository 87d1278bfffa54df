// JSON documents printed as YAML for `-o yaml`, the way kubectl prints
// objects: keys in their order, strings always quoted (so "8.0.0" or "true"
// stay strings when read back). Pure; thread-safe.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace canhazgpu::cli {

// The document as YAML, ending in a newline. Invalid UTF-8 in strings is
// replaced first (text from drivers and other users).
std::string ToYaml(nlohmann::ordered_json document);

}  // namespace canhazgpu::cli
