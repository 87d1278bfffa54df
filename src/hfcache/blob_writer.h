// Writing one blob's bytes to its .incomplete file as they arrive: hashed on
// the way, gathered into large writes (libcurl hands over 16 KiB at a time,
// and small write(2)s cost more than the hashing), resumable from what an
// earlier attempt left on disk. Not thread-safe; one writer per transfer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "hfcache/content_hash.h"

namespace canhazgpu::hfcache {

class BlobWriter {
 public:
  // Opens (creating) `path` for a file of `size` bytes hashed as `kind`, and
  // continues after the bytes already there — re-hashing them — or starts
  // over when they cannot be used (longer than `size`, unreadable).
  // `durable`: Sync() will be called, so writeback is started early as the
  // file grows (overlapping disk and network); otherwise the page cache
  // keeps the bytes until the kernel writes them, as curl's output would.
  static absl::StatusOr<std::unique_ptr<BlobWriter>> Open(const std::filesystem::path& path,
                                                          HashKind kind, uint64_t size,
                                                          bool durable);
  ~BlobWriter();  // flushes, best effort, so a later attempt can resume
  BlobWriter(const BlobWriter&) = delete;
  BlobWriter& operator=(const BlobWriter&) = delete;

  // Bytes of the file accepted so far (on disk or buffered).
  uint64_t size() const { return accepted_; }
  // Drops everything: the server sent the whole file where a range was asked.
  absl::Status Restart();
  // ResourceExhausted or Unavailable, naming the file, when a write fails.
  absl::Status Append(std::string_view bytes);
  // Writes what is buffered; returns the content's hex digest. Call once,
  // after the last Append.
  absl::StatusOr<std::string> Finish();
  // Makes the written bytes durable (before the blob is named as verified).
  absl::Status Sync();
  // Removes the file (it did not verify).
  void Discard();

 private:
  BlobWriter(std::filesystem::path path, int fd, HashKind kind, uint64_t size, bool durable);
  absl::Status Flush();

  std::filesystem::path path_;
  int fd_;
  HashKind kind_;
  uint64_t file_size_;
  bool durable_;
  std::unique_ptr<ContentHasher> hasher_;
  std::vector<char> buffer_;
  size_t buffered_ = 0;
  uint64_t accepted_ = 0;
  uint64_t written_ = 0;         // bytes in the file
  uint64_t writeback_from_ = 0;  // where writeback was last started
};

}  // namespace canhazgpu::hfcache
