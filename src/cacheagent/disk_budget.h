// Which cache folders to delete: those no plan has wanted for longer than
// the grace period (garbage collection), and, while the cache is over its
// disk ceiling, other unwanted folders, the longest unwanted first. Folders
// a plan still wants are never chosen: when they alone exceed the ceiling
// the agent fails the newest item instead (OverCeiling). Pure functions;
// thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock.h"

namespace canhazgpu::cacheagent {

struct CacheFolder {
  std::filesystem::path path;
  int64_t bytes = 0;
  // Unset while a plan item for this node wants the folder.
  std::optional<TimePoint> unwanted_since;
};

// `limit_bytes` 0 means no ceiling.
std::vector<std::filesystem::path> FoldersToRemove(const std::vector<CacheFolder>& folders,
                                                   int64_t limit_bytes, Duration grace,
                                                   TimePoint now);

// Whether `extra_bytes` more would take the wanted folders over the ceiling
// (`limit_bytes` 0: never). Unwanted folders do not count: they would be
// removed to make room.
bool OverCeiling(const std::vector<CacheFolder>& folders, int64_t extra_bytes, int64_t limit_bytes);

// `percent` (1 to 100) of the size of the file system holding `at` (or,
// while `at` does not exist yet, its nearest existing parent). The default
// ceiling is such a share, so that a plan naming a huge model fills the
// cache, not the node's disk.
absl::StatusOr<int64_t> FileSystemShare(const std::filesystem::path& at, int percent);

}  // namespace canhazgpu::cacheagent
