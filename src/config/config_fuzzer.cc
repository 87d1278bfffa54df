// libFuzzer target: config files. The first byte picks the format ('0'
// YAML, '1' JSON, '2' TOML, modulo 3), the rest is the file's text. Whatever
// parses must respect the bounds config_file.h promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "config/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace canhazgpu::config;
  if (size == 0 || size > kMaxConfigFileBytes) return 0;
  static const char* const kPaths[] = {"fuzz.yaml", "fuzz.json", "fuzz.toml"};
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  absl::StatusOr<ConfigFile> file = ParseConfigText(kPaths[data[0] % 3], text);
  if (!file.ok()) return 0;
  if (file->values.size() > static_cast<size_t>(kMaxConfigSettings)) std::abort();
  for (const auto& [key, value] : file->values) {
    if (key.find('\0') != std::string::npos || value.text.find('\0') != std::string::npos) {
      std::abort();
    }
  }
  return 0;
}
