// The file operations packing shares beyond core/file_read.h: a whole file
// of any size (what lstat said it holds), and a symlink read without being
// followed. Unpacking writes through core/file_write.h.
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

}  // namespace canhazgpu::changeset
