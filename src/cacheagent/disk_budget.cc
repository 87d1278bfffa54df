#include "cacheagent/disk_budget.h"

#include <algorithm>

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

}  // namespace canhazgpu::cacheagent
