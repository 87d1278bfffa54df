// NVIDIA's MIG capability device nodes. A process can use a MIG instance
// only if it can open the device nodes of the instance's GPU instance and
// compute instance "access" capabilities, /dev/nvidia-caps/nvidia-cap<minor>;
// the driver lists the minors in /proc/driver/nvidia-caps/mig-minors, one
// "<capability> <minor>" a line: "gpu<g>/gi<gi>/access 21",
// "gpu<g>/gi<gi>/ci<ci>/access 22" (g the GPU's minor), besides "config" and
// "monitor". A container given a MIG device needs both nodes. Immutable
// once read; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu::host {

inline constexpr char kMigMinorsPath[] = "/proc/driver/nvidia-caps/mig-minors";
inline constexpr char kNvidiaCapsDir[] = "/dev/nvidia-caps";

class MigMinors {
 public:
  // The file at `path`; NotFound where the driver has no MIG capabilities.
  static absl::StatusOr<MigMinors> Read(const std::string& path = kMigMinorsPath);
  // Lines that are not "<name> <minor>" are skipped.
  static MigMinors Parse(std::string_view text);

  // The two device nodes of a MIG instance: its GPU instance's access node,
  // then its compute instance's. NotFound, naming the missing capability,
  // when the file lists either not (the instance is gone or not set up).
  absl::StatusOr<std::vector<std::string>> CapabilityNodes(int gpu_minor, int gpu_instance,
                                                           int compute_instance) const;

 private:
  std::string path_;                   // for messages
  std::map<std::string, int> minors_;  // "gpu0/gi1/access" -> 21
};

}  // namespace canhazgpu::host
