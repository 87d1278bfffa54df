// Reading a change set bundle (layout in bundle.h) front to back without
// holding what it expands to: the compressed bytes are inflated 64 KiB at
// a time and each entry handed to a BundleSink as it is read, a file's
// contents in pieces. A bundle comes from a ConfigMap anyone in the
// namespace may edit, so every length is checked against what is left and
// against BundleLimits before anything is kept: a 500 KiB bundle can
// inflate to 500 MiB, and its reader must not follow it there.
//
// Thread safety: pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "changeset/change_set.h"

namespace canhazgpu::changeset {

// What one bundle may expand to. A vLLM checkout is about 50 MiB of
// source; a change set that passes the 8 MiB compressed ceiling
// (kMaxBundleSize) is rarely more than 100 MiB expanded. 1 GiB leaves room
// for a committed binary or two while keeping a crafted bundle (deflate
// reaches about 1000:1) from filling a node's disk or the init
// container's memory.
inline constexpr uint64_t kMaxExpandedSize = uint64_t{1} << 30;
// One file's contents: a quarter of the total, so one oversized file is
// named as such rather than as "the bundle is too big".
inline constexpr uint64_t kMaxExpandedFileSize = uint64_t{256} << 20;
// A path or a symlink's target: Linux's PATH_MAX; longer cannot be made.
inline constexpr uint64_t kMaxPathSize = 4096;

struct BundleLimits {
  uint64_t expanded = kMaxExpandedSize;  // everything inflated, as the header counts it
  uint64_t file = kMaxExpandedFileSize;  // one file's contents
};

// Receives a bundle's contents in order. A failed status stops the read
// and is returned as is.
class BundleSink {
 public:
  virtual ~BundleSink() = default;
  // The base commit and the notes, before any entry; `header.entries` is
  // empty.
  virtual absl::Status OnStart(const ChangeSet& header) = 0;
  // One entry, in path order: for a symlink with its target in `data`; for
  // a file with `data` empty, its `size` bytes following through OnData
  // (none when 0), then OnEntryEnd. Deletions and symlinks get OnEntryEnd
  // right away.
  virtual absl::Status OnEntry(const ChangeEntry& entry, uint64_t size) = 0;
  virtual absl::Status OnData(std::string_view piece) = 0;
  virtual absl::Status OnEntryEnd() = 0;
};

// Reads `bundle` into `sink`. Refuses, in one line each, what Decode
// (bundle.h) refuses, and what is over `limits` with FailedPrecondition
// naming the limit. The checksum of the inflated bytes is checked only at
// the end, so a sink must not act on what it got until this returns OK:
// read twice, first to check (keeping no file contents), then to act.
absl::Status ReadBundle(std::string_view bundle, BundleSink& sink, const BundleLimits& limits = {});

}  // namespace canhazgpu::changeset
