#include "mps/isolation.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/file_read.h"
#include "core/strings.h"
#include "mps/share_limits.h"

namespace canhazgpu::mps {
namespace {

// "00000000:1B:00.0" (NVML's 8-digit domain) and "0000:1b:00.0" alike become
// the kernel's "0000:1b:00.0".
std::string NormalizePciAddress(std::string_view bus_id) {
  std::string out;
  for (char c : Trim(bus_id)) out.push_back(static_cast<char>(std::tolower(c)));
  size_t colon = out.find(':');
  if (colon != std::string::npos && colon > 4 && out.find(':', colon + 1) != std::string::npos) {
    out.erase(0, colon - 4);
  }
  return out;
}

struct DmemRegionLine {
  std::string name;
  uint64_t bytes = 0;
};

std::vector<DmemRegionLine> ParseCapacity(std::string_view text) {
  std::vector<DmemRegionLine> regions;
  for (std::string_view line : Split(text, '\n', /*skip_empty=*/true)) {
    std::vector<std::string_view> words = Split(Trim(line), ' ', /*skip_empty=*/true);
    if (words.size() != 2) continue;
    DmemRegionLine region{std::string(words[0]), 0};
    if (!ParseInt(words[1], &region.bytes)) continue;
    regions.push_back(std::move(region));
  }
  return regions;
}

bool HasComponent(std::string_view region, std::string_view component) {
  for (std::string_view part : Split(region, '/')) {
    if (part == component) return true;
  }
  return false;
}

}  // namespace

std::string_view MemoryIsolationName(MemoryIsolation isolation) {
  switch (isolation) {
    case MemoryIsolation::kNone:
      return "none";
    case MemoryIsolation::kMps:
      return "mps";
    case MemoryIsolation::kMpsDmem:
      return "mps-dmem";
  }
  return "none";
}

std::optional<MemoryIsolation> ParseMemoryIsolation(std::string_view name) {
  for (MemoryIsolation i :
       {MemoryIsolation::kNone, MemoryIsolation::kMps, MemoryIsolation::kMpsDmem}) {
    if (MemoryIsolationName(i) == name) return i;
  }
  return std::nullopt;
}

bool CudaVersionAtLeast(std::string_view version, int major, int minor) {
  std::vector<std::string_view> parts = Split(Trim(version), '.');
  int have_major = 0;
  int have_minor = 0;
  if (parts.empty() || !ParseInt(parts[0], &have_major)) return false;
  if (parts.size() > 1 && !ParseInt(parts[1], &have_minor)) return false;
  return have_major > major || (have_major == major && have_minor >= minor);
}

bool HasDmemController(const std::string& cgroup_root) {
  absl::StatusOr<std::string> controllers =
      ReadRegularFile(StrCat(cgroup_root, "/cgroup.controllers"), 4096, "cgroup.controllers");
  if (!controllers.ok()) return false;
  for (std::string_view word : Split(Trim(*controllers), ' ', /*skip_empty=*/true)) {
    if (word == "dmem") return true;
  }
  return false;
}

MemoryIsolation DetectIsolation(const IsolationProbe& probe, std::string_view pci_bus_id) {
  if (access(ControlProgramPath(probe.driver_root).c_str(), X_OK) != 0) {
    return MemoryIsolation::kNone;
  }
  // MPS v3 memory partitioning needs all three; any one missing leaves MPS's
  // own limits.
  if (CudaVersionAtLeast(probe.cuda_driver_version, 13, 4) &&
      HasDmemController(probe.cgroup_root) && DmemRegion(probe.cgroup_root, "", pci_bus_id).ok()) {
    return MemoryIsolation::kMpsDmem;
  }
  return MemoryIsolation::kMps;
}

absl::StatusOr<std::string> DmemRegion(const std::string& cgroup_root, std::string_view gpu_uuid,
                                       std::string_view pci_bus_id) {
  const std::string path = StrCat(cgroup_root, "/dmem.capacity");
  absl::StatusOr<std::string> text = ReadRegularFile(path, 1 << 16, "dmem.capacity");
  if (!text.ok()) {
    return absl::NotFoundError(
        StrCat("gpu ", gpu_uuid, ": cannot read ", path, ": ", text.status().message()));
  }
  const std::string pci = NormalizePciAddress(pci_bus_id);
  const std::vector<DmemRegionLine> regions = ParseCapacity(*text);
  const DmemRegionLine* best = nullptr;
  for (const DmemRegionLine& region : regions) {
    if (pci.empty() || !HasComponent(region.name, pci)) continue;
    bool vidmem = region.name.ends_with("/vidmem");
    bool best_vidmem = best != nullptr && best->name.ends_with("/vidmem");
    if (best == nullptr || (vidmem && !best_vidmem) ||
        (vidmem == best_vidmem && region.bytes > best->bytes)) {
      best = &region;
    }
  }
  if (best != nullptr) return best->name;
  return absl::NotFoundError(
      StrCat("gpu ", gpu_uuid, ": no dmem region for PCI address ", pci, " in ", path));
}

absl::Status WriteDmemMax(const std::string& cgroup_root, const std::string& job_cgroup,
                          std::string_view gpu_uuid, std::string_view pci_bus_id, uint64_t bytes) {
  absl::StatusOr<std::string> region = DmemRegion(cgroup_root, gpu_uuid, pci_bus_id);
  if (!region.ok()) return region.status();
  const std::string path = StrCat(job_cgroup, "/dmem.max");
  // Without O_CREAT: a cgroup file is made by the kernel, never by us.
  // O_TRUNC as a shell's ">" does; cgroupfs ignores it.
  int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return absl::FailedPreconditionError(
          StrCat("gpu ", gpu_uuid, ": ", path,
                 " does not exist: the dmem controller is not enabled for this cgroup"));
    }
    return absl::PermissionDeniedError(
        StrCat("gpu ", gpu_uuid, ": cannot open ", path, ": ", std::strerror(errno)));
  }
  const std::string line = StrCat(*region, " ", bytes, "\n");
  ssize_t n = write(fd, line.data(), line.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(line.size())) {
    return absl::InternalError(StrCat("gpu ", gpu_uuid, ": cannot write ", path, ": ",
                                      n < 0 ? std::strerror(err) : "short write"));
  }
  return absl::OkStatus();
}

}  // namespace canhazgpu::mps
