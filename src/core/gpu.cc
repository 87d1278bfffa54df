#include "core/gpu.h"

namespace canhazgpu {

std::string_view MigModeName(MigMode mode) {
  switch (mode) {
    case MigMode::kDisabled:
      return "disabled";
    case MigMode::kEnabled:
      return "enabled";
    case MigMode::kUnsupported:
      break;
  }
  return "unsupported";
}

}  // namespace canhazgpu
