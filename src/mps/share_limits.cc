#include "mps/share_limits.h"

#include <algorithm>
#include <cctype>

#include "core/gpu.h"
#include "core/strings.h"

namespace canhazgpu::mps {
namespace {

bool IsUuid(std::string_view uuid) {
  if (uuid.size() < 5 || uuid.size() > 64 || uuid.substr(0, 4) != "GPU-") return false;
  for (char c : uuid.substr(4)) {
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return true;
}

bool IsShareId(std::string_view id) {
  if (id.empty() || id.size() > 128 || id == "." || id == "..") return false;
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string ControlProgramPath(std::string_view driver_root) {
  std::string root(driver_root);
  if (root.empty() || root.back() != '/') root.push_back('/');
  return StrCat(root, kControlProgram);
}

std::string MpsMemoryValue(uint64_t bytes) { return StrCat(bytes / kMiB, "M"); }

int ActiveThreadPercentage(uint64_t share_bytes, uint64_t shareable_bytes) {
  if (shareable_bytes == 0 || share_bytes >= shareable_bytes) return 100;
  // Rounded up in integers: ceil(share * 100 / shareable), without overflow
  // for any memory size (share < shareable here).
  unsigned __int128 scaled = static_cast<unsigned __int128>(share_bytes) * 100;
  uint64_t pct = static_cast<uint64_t>((scaled + shareable_bytes - 1) / shareable_bytes);
  return static_cast<int>(std::max<uint64_t>(pct, 1));
}

absl::Status ValidateShare(std::string_view gpu_uuid, std::string_view share_id,
                           uint64_t share_bytes, uint64_t shareable_bytes) {
  if (!IsUuid(gpu_uuid)) {
    return absl::InvalidArgumentError(
        StrCat("gpu ", EscapeForDisplay(gpu_uuid), ": not a GPU UUID (GPU-...)"));
  }
  if (!IsShareId(share_id)) {
    return absl::InvalidArgumentError(StrCat("gpu ", gpu_uuid, ": share id ",
                                             EscapeForDisplay(share_id),
                                             " must be 1-128 letters, digits, '.', '_' or '-'"));
  }
  if (share_bytes < kMiB) {
    return absl::InvalidArgumentError(StrCat("gpu ", gpu_uuid, ": share ", share_id, " of ",
                                             share_bytes,
                                             " bytes is below the 1 MiB MPS can limit"));
  }
  if (share_bytes > shareable_bytes) {
    return absl::InvalidArgumentError(StrCat("gpu ", gpu_uuid, ": share ", share_id, " of ",
                                             share_bytes / kMiB, " MiB is more than the ",
                                             shareable_bytes / kMiB, " MiB it can share"));
  }
  return absl::OkStatus();
}

std::vector<EnvVar> ShareEnvironment(std::string_view gpu_uuid, std::string_view pipe_dir,
                                     uint64_t share_bytes, uint64_t shareable_bytes) {
  return {
      {"CUDA_MPS_PIPE_DIRECTORY", std::string(pipe_dir)},
      {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", StrCat(gpu_uuid, "=", MpsMemoryValue(share_bytes))},
      {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
       StrCat(ActiveThreadPercentage(share_bytes, shareable_bytes))},
  };
}

}  // namespace canhazgpu::mps
