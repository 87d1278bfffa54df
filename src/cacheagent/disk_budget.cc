#include "cacheagent/disk_budget.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/strings.h"

namespace canhazgpu::cacheagent {

std::vector<std::filesystem::path> FoldersToRemove(const std::vector<CacheFolder>& folders,
                                                   int64_t limit_bytes, Duration grace,
                                                   TimePoint now) {
  std::vector<std::filesystem::path> out;
  int64_t used = 0;
  std::vector<const CacheFolder*> unwanted;
  for (const CacheFolder& f : folders) {
    if (f.unwanted_since && now - *f.unwanted_since >= grace) {
      out.push_back(f.path);
      continue;
    }
    used += f.bytes;
    if (f.unwanted_since) unwanted.push_back(&f);
  }
  if (limit_bytes <= 0) return out;
  std::stable_sort(unwanted.begin(), unwanted.end(),
                   [](const CacheFolder* a, const CacheFolder* b) {
                     return *a->unwanted_since < *b->unwanted_since;
                   });
  for (const CacheFolder* f : unwanted) {
    if (used <= limit_bytes) break;
    out.push_back(f->path);
    used -= f->bytes;
  }
  return out;
}

bool OverCeiling(const std::vector<CacheFolder>& folders, int64_t extra_bytes,
                 int64_t limit_bytes) {
  if (limit_bytes <= 0) return false;
  int64_t wanted = extra_bytes;
  for (const CacheFolder& f : folders) {
    if (!f.unwanted_since) wanted += f.bytes;
  }
  return wanted > limit_bytes;
}

absl::StatusOr<int64_t> FileSystemShare(const std::filesystem::path& at, int percent) {
  if (percent < 1 || percent > 100) {
    return absl::InvalidArgumentError(
        StrCat("a share of the disk must be 1% to 100%, not ", percent, "%"));
  }
  std::filesystem::path existing = at.empty() ? std::filesystem::path(".") : at;
  std::error_code ec;
  while (!std::filesystem::exists(existing, ec) && existing.has_parent_path() &&
         existing.parent_path() != existing) {
    existing = existing.parent_path();
  }
  struct statvfs fs {};
  if (statvfs(existing.c_str(), &fs) != 0) {
    return absl::UnavailableError(StrCat("cannot read the size of the file system of ",
                                         existing.string(), ": ", std::strerror(errno)));
  }
  const auto total = static_cast<__int128>(fs.f_blocks) * fs.f_frsize;
  return static_cast<int64_t>(total * percent / 100);
}

}  // namespace canhazgpu::cacheagent
