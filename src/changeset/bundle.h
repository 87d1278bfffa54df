// The change set on the wire: a versioned, checksummed, deflate-compressed
// binary bundle (ADR 0009), its split into ConfigMap binaryData parts, and
// the ceiling beyond which a run is refused with the biggest files named.
//
// Layout (integers little-endian):
//   header, 40 bytes: magic "K8HZCSET", version u32 (1), flags u32 (0),
//     raw size u64, packed size u64, CRC-32 of the packed bytes u32,
//     CRC-32 of the raw bytes u32;
//   packed: zlib (deflate) of raw;
//   raw: base commit (40 hex), note count u32, notes (u32 length + bytes),
//     entry count u32, entries: path (u32 length + bytes), has-base u8,
//     base blob id (20 bytes, when has-base), kind u8 (0 deleted, 1 file,
//     2 symlink), then for a file its mode u32 (0644 or 0755), and for a
//     file or symlink its data (u64 length + bytes).
// A later version (a delta encoding) bumps the version; this one refuses it.
// Reading is bundle_reader.h: streamed, within BundleLimits.
//
// Thread safety: pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "changeset/bundle_reader.h"
#include "changeset/change_set.h"

namespace canhazgpu::changeset {

inline constexpr uint32_t kBundleVersion = 1;
// A ConfigMap may hold 1 MiB in all; the rest is left for keys and metadata.
inline constexpr size_t kConfigMapPartSize = 900 * 1024;
// Past this a run is refused: the change set is data, not a checkout.
inline constexpr uint64_t kMaxBundleSize = 8 * 1024 * 1024;

std::string Encode(const ChangeSet& change_set);
// Refuses, in one line each, what is not a bundle, a newer version, a
// truncated or corrupt one, any entry that could write outside the target
// (absolute paths, "..", ".git", a path below a symlink entry), and what
// expands past `limits`. Holds every file's contents: to write them to disk
// without that, see unpack.h.
absl::StatusOr<ChangeSet> Decode(std::string_view bundle, const BundleLimits& limits = {});
// The same checks, keeping every entry but no file's contents (`data`
// empty for files): what to print, list or check a base against.
absl::StatusOr<ChangeSet> DecodeIndex(std::string_view bundle, const BundleLimits& limits = {});

// `bundle` cut into pieces of at most `part_size` bytes (at least one piece,
// in order); JoinParts puts them back. Decode catches a missing piece.
std::vector<std::string> SplitIntoParts(std::string_view bundle, size_t part_size);
std::string JoinParts(const std::vector<std::string>& parts);

// ResourceExhausted when `bundle_size` exceeds `limit`: "change set is 40.2
// MiB compressed, over the 8.0 MiB limit; biggest: data/x.bin 39.0 MiB, ...".
absl::Status CheckBundleSize(uint64_t bundle_size, const ChangeSet& change_set,
                             uint64_t limit = kMaxBundleSize);

}  // namespace canhazgpu::changeset
