// An exclusive advisory lock (flock) on a file, held for the life of the
// object: how fetches of one mirror, from threads or processes, take turns.
// flock locks belong to the open file, so two FileLock objects on the same
// path exclude each other even inside one process.
//
// Thread safety: one FileLock per holder; Acquire blocks until it is free.
#pragma once

#include <filesystem>

#include "absl/status/statusor.h"

namespace canhazgpu::git {

class FileLock {
 public:
  // Creates `path` if missing and waits for the lock.
  static absl::StatusOr<FileLock> Acquire(const std::filesystem::path& path);

  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace canhazgpu::git
