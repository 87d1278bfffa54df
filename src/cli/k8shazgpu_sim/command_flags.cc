#include "cli/k8shazgpu_sim/command_flags.h"

#include <iostream>

#include "cli/common/exit_code.h"

namespace canhazgpu::sim {

std::optional<int> ParseCommandFlags(const std::vector<std::string>& args,
                                     const std::vector<cli::FlagSpec>& specs,
                                     const std::string& command, const char* usage,
                                     cli::ParsedFlags* flags) {
  absl::StatusOr<cli::ParsedFlags> parsed = cli::ParseFlags(args, specs, command);
  if (!parsed.ok()) {
    std::cerr << "k8shazgpu-sim: " << parsed.status().message() << "\n";
    return cli::kExitUsage;
  }
  if (parsed->Has("help")) {
    std::cout << usage << cli::FlagHelp(specs);
    return 0;
  }
  for (const cli::FlagSpec& spec : specs) {
    if (auto v = parsed->Value(spec.name); v) {
      if (absl::Status s = cli::CheckFlagValue(spec, *v); !s.ok()) {
        std::cerr << "k8shazgpu-sim: --" << spec.name << ": " << s.message() << "\n";
        return cli::kExitUsage;
      }
    }
  }
  *flags = *std::move(parsed);
  return std::nullopt;
}

std::string FlagOrDefault(const cli::ParsedFlags& flags, const std::vector<cli::FlagSpec>& specs,
                          const std::string& name) {
  if (auto v = flags.Value(name)) return *v;
  for (const cli::FlagSpec& spec : specs) {
    if (spec.name == name) return spec.default_value;
  }
  return "";
}

}  // namespace canhazgpu::sim
