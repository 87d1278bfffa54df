// Detects the model a process serves from its command line, as canhazgpu
// does (reference §1.12): lm_eval's --model_args pretrained=…, vLLM's
// `serve X` or --model X, and any other program's --model X. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace canhazgpu::alloc {

struct ModelInfo {
  std::string provider;  // "meta-llama"; empty when the model has no "org/"
  std::string model;     // "meta-llama/Llama-3.1-8B", at most 50 chars + "..."
  bool operator==(const ModelInfo&) const = default;
};

std::optional<ModelInfo> DetectModel(const std::vector<std::string>& argv);

}  // namespace canhazgpu::alloc
