// The file operations packing and unpacking share beyond core/file_read.h
// and core/file_write.h: a whole file of any size (what lstat said it
// holds), and symlinks read and replaced without being followed.
//
// Thread safety: functions of the file system only; safe from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace canhazgpu::changeset {

// The content of the regular file at `path`, which lstat said holds
// `size` bytes; InvalidArgument when it grew since (edited while packing).
absl::StatusOr<std::string> ReadWholeFile(const std::filesystem::path& path, uint64_t size);
// The target of the symlink at `path`, exactly as stored.
absl::StatusOr<std::string> ReadSymlinkTarget(const std::filesystem::path& path);

// Replaces whatever file or symlink is at `path` with a symlink to `target`:
// made under a random temporary name next to it, then renamed over it, so
// the path never goes missing (core/file_write.h).
absl::Status CreateSymlinkAtomically(const std::filesystem::path& path, const std::string& target);

}  // namespace canhazgpu::changeset
