#include "hfcache/blob_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/atomic_file.h"
#include "core/strings.h"

namespace canhazgpu::hfcache {
namespace {

// Few write(2)s, yet the bytes are still in the CPU cache when the kernel
// copies them into the page cache: with 1 MiB that copy cost more than all
// the hashing (docs/perf.md).
constexpr size_t kBufferBytes = 64 << 10;
// Writeback is started every this many bytes, so the disk works while the
// network does and the fdatasync before naming the blob finds little to do.
constexpr uint64_t kWritebackBytes = 8u << 20;

absl::Status WriteError(const std::filesystem::path& path, int error) {
  const std::string why = StrCat("cannot write ", path.string(), ": ", strerror(error));
  if (error == ENOSPC || error == EDQUOT) {
    return absl::ResourceExhaustedError(StrCat(why, " (free space on the cache disk)"));
  }
  return absl::UnavailableError(why);
}

}  // namespace

absl::StatusOr<std::unique_ptr<BlobWriter>> BlobWriter::Open(const std::filesystem::path& path,
                                                             HashKind kind, uint64_t size,
                                                             bool durable) {
  const int fd = OpenFixedNameFile(path.string(), O_WRONLY, 0644);
  if (fd < 0) return WriteError(path, errno);
  std::unique_ptr<BlobWriter> writer(new BlobWriter(path, fd, kind, size, durable));
  struct stat st;
  if (fstat(fd, &st) != 0) return WriteError(path, errno);
  const uint64_t existing = static_cast<uint64_t>(st.st_size);
  if (existing > 0 && existing <= size &&
      HashFilePrefix(path.string(), existing, *writer->hasher_).ok() &&
      lseek(fd, static_cast<off_t>(existing), SEEK_SET) >= 0) {
    writer->accepted_ = existing;
    writer->written_ = existing;
    writer->writeback_from_ = existing;
    return writer;
  }
  if (absl::Status s = writer->Restart(); !s.ok()) return s;
  return writer;
}

BlobWriter::BlobWriter(std::filesystem::path path, int fd, HashKind kind, uint64_t size,
                       bool durable)
    : path_(std::move(path)),
      fd_(fd),
      kind_(kind),
      file_size_(size),
      durable_(durable),
      hasher_(std::make_unique<ContentHasher>(kind, size)),
      buffer_(kBufferBytes) {}

BlobWriter::~BlobWriter() {
  if (fd_ >= 0) {
    Flush().IgnoreError();
    close(fd_);
  }
}

absl::Status BlobWriter::Restart() {
  buffered_ = 0;
  accepted_ = 0;
  written_ = 0;
  writeback_from_ = 0;
  hasher_ = std::make_unique<ContentHasher>(kind_, file_size_);
  if (ftruncate(fd_, 0) != 0 || lseek(fd_, 0, SEEK_SET) < 0) return WriteError(path_, errno);
  return absl::OkStatus();
}

absl::Status BlobWriter::Append(std::string_view bytes) {
  hasher_->Update(bytes);
  accepted_ += bytes.size();
  while (!bytes.empty()) {
    const size_t n = std::min(bytes.size(), buffer_.size() - buffered_);
    memcpy(buffer_.data() + buffered_, bytes.data(), n);
    buffered_ += n;
    bytes.remove_prefix(n);
    if (buffered_ == buffer_.size()) {
      if (absl::Status s = Flush(); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status BlobWriter::Flush() {
  size_t offset = 0;
  while (offset < buffered_) {
    const ssize_t n = write(fd_, buffer_.data() + offset, buffered_ - offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return WriteError(path_, n < 0 ? errno : EIO);
    offset += static_cast<size_t>(n);
  }
  written_ += buffered_;
  buffered_ = 0;
  if (durable_ && written_ - writeback_from_ >= kWritebackBytes) {
    // Only a hint: an error here shows again at fdatasync.
    sync_file_range(fd_, static_cast<off_t>(writeback_from_),
                    static_cast<off_t>(written_ - writeback_from_), SYNC_FILE_RANGE_WRITE);
    writeback_from_ = written_;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> BlobWriter::Finish() {
  if (absl::Status s = Flush(); !s.ok()) return s;
  return hasher_->FinishHex();
}

absl::Status BlobWriter::Sync() {
  if (fdatasync(fd_) != 0) return WriteError(path_, errno);
  return absl::OkStatus();
}

void BlobWriter::Discard() {
  buffered_ = 0;
  unlink(path_.c_str());
}

}  // namespace canhazgpu::hfcache
