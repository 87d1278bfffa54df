// The two content hashes the Hub names files by, computed while the bytes
// stream past: SHA-256 for large (LFS) files, and git's blob SHA-1
// ("blob <size>\0" + content) for the small files kept in git itself. Not
// thread-safe; one hasher per file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace canhazgpu::hfcache {

enum class HashKind { kSha256, kGitBlobSha1 };

class ContentHasher {
 public:
  // `size` is the whole file's size; git's blob hash starts with it.
  ContentHasher(HashKind kind, uint64_t size);
  ~ContentHasher();
  ContentHasher(const ContentHasher&) = delete;
  ContentHasher& operator=(const ContentHasher&) = delete;

  void Update(std::string_view bytes);
  // Lowercase hex digest. Call once.
  std::string FinishHex();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Feeds the first `bytes` of the file at `path` to `hasher` (the part of an
// interrupted download already on disk). Unavailable with the system's
// reason when it cannot be read.
absl::Status HashFilePrefix(const std::string& path, uint64_t bytes, ContentHasher& hasher);

}  // namespace canhazgpu::hfcache
