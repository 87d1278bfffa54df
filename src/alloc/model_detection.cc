#include "alloc/model_detection.h"

#include <algorithm>
#include <cctype>

#include "core/strings.h"

namespace canhazgpu::alloc {
namespace {

constexpr size_t kMaxModelLength = 50;

// Value of --flag X or --flag=X.
std::optional<std::string> FlagValue(const std::vector<std::string>& argv, std::string_view flag) {
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == flag && i + 1 < argv.size()) return argv[i + 1];
    if (argv[i].size() > flag.size() + 1 && argv[i].starts_with(flag) &&
        argv[i][flag.size()] == '=') {
      return argv[i].substr(flag.size() + 1);
    }
  }
  return std::nullopt;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// An absolute path to local weights: map its directory name to the likely
// hub organisation by prefix, as canhazgpu does for lm_eval.
std::optional<std::string> ModelFromPath(std::string_view path) {
  std::string_view base = path.substr(path.find_last_of('/') + 1);
  std::string lower = Lower(base);
  static const std::pair<const char*, const char*> kPrefixes[] = {
      {"meta-llama", "meta-llama/"},
      {"llama", "meta-llama/"},
      {"qwen", "qwen/"},
      {"deepseek", "deepseek-ai/"},
      {"mistral", "mistralai/"},
      {"mixtral", "mistralai/"},
      {"gpt", "openai/"},
      {"whisper", "openai/"},
  };
  for (const auto& [prefix, org] : kPrefixes) {
    if (lower.starts_with(prefix)) return StrCat(org, base);
  }
  return std::nullopt;
}

// pretrained=… from a JSON object or a k=v,k=v list.
std::optional<std::string> PretrainedFromModelArgs(std::string_view args) {
  args = Trim(args);
  if (args.starts_with("{")) {
    size_t key = args.find("\"pretrained\"");
    if (key == std::string_view::npos) return std::nullopt;
    size_t open = args.find('"', args.find(':', key) + 1);
    if (open == std::string_view::npos) return std::nullopt;
    std::string value;
    for (size_t i = open + 1; i < args.size(); ++i) {
      if (args[i] == '\\' && i + 1 < args.size()) {
        value.push_back(args[++i]);
      } else if (args[i] == '"') {
        return value;
      } else {
        value.push_back(args[i]);
      }
    }
    return std::nullopt;
  }
  for (std::string_view pair : Split(args, ',')) {
    pair = Trim(pair);
    if (!pair.starts_with("pretrained=")) continue;
    std::string_view value = pair.substr(11);
    if (value.starts_with("/")) return ModelFromPath(value);
    return std::string(value);
  }
  return std::nullopt;
}

bool IsLmEval(const std::string& token) { return token.ends_with("lm_eval"); }
bool IsVllm(const std::string& token) {
  return token.ends_with("vllm") || token.find("vllm.") != std::string::npos;
}

std::optional<std::string> DetectModelName(const std::vector<std::string>& argv) {
  if (std::any_of(argv.begin(), argv.end(), IsLmEval)) {
    if (auto args = FlagValue(argv, "--model_args")) return PretrainedFromModelArgs(*args);
  }
  auto vllm = std::find_if(argv.begin(), argv.end(), IsVllm);
  if (vllm != argv.end()) {
    if (auto model = FlagValue(argv, "--model")) return model;
    auto serve = std::find(vllm, argv.end(), "serve");
    if (serve != argv.end() && serve + 1 != argv.end() && !(serve + 1)->starts_with("--")) {
      return *(serve + 1);
    }
    return std::nullopt;
  }
  return FlagValue(argv, "--model");
}

}  // namespace

std::optional<ModelInfo> DetectModel(const std::vector<std::string>& argv) {
  std::optional<std::string> name = DetectModelName(argv);
  if (!name || name->empty()) return std::nullopt;
  ModelInfo info;
  size_t slash = name->find('/');
  if (slash != std::string::npos && slash > 0) info.provider = name->substr(0, slash);
  info.model = name->size() > kMaxModelLength ? name->substr(0, kMaxModelLength) + "..." : *name;
  return info;
}

}  // namespace canhazgpu::alloc
