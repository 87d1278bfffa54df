#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/strings.h"

namespace canhazgpu {
namespace {

// Attempts at a name not yet taken. With 64 random bits, a clash means
// someone is planting names as fast as we pick them, or the random source
// is broken; either way, give up rather than spin.
constexpr int kNameAttempts = 16;
// NAME_MAX is 255; ".", ".tmp." and 16 hex digits take 22 of it.
constexpr size_t kMaxNameKept = 200;

std::string DirectoryOf(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

void SyncDirectoryOf(const std::string& path) {
  if (const int fd = open(DirectoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

}  // namespace

int OpenFixedNameFile(const std::string& path, int flags, mode_t mode) {
  const int all = flags | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
  int fd = open(path.c_str(), all, mode);
  if (fd < 0 && errno == ELOOP) {
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode) && unlink(path.c_str()) == 0) {
      fd = open(path.c_str(), all, mode);
    } else {
      errno = ELOOP;
    }
  }
  return fd;
}

absl::Status LocalFileError(int err, std::string_view message) {
  std::string text = StrCat(message, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(text);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(text);
    case EEXIST:
      return absl::AlreadyExistsError(text);
    case EISDIR:
    case ENOTDIR:
    case ENOTEMPTY:
    case ELOOP:
      return absl::FailedPreconditionError(text);
    default:
      return absl::InternalError(text);
  }
}

absl::StatusOr<std::string> RandomTemporaryPathFor(std::string_view path) {
  unsigned char bytes[8];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return LocalFileError(errno, "cannot get random bytes for a temporary name");
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string suffix;
  for (unsigned char b : bytes) {
    suffix.push_back(kHex[b >> 4]);
    suffix.push_back(kHex[b & 0xf]);
  }
  const size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  name = name.substr(0, kMaxNameKept);
  const std::string prefix =
      slash == std::string_view::npos ? "" : std::string(path.substr(0, slash + 1));
  return StrCat(prefix, ".", name, ".tmp.", suffix);
}

absl::StatusOr<AtomicFile> AtomicFile::Create(const std::string& path, mode_t mode, FileSync sync) {
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    absl::StatusOr<std::string> temporary = RandomTemporaryPathFor(path);
    if (!temporary.ok()) return temporary.status();
    // O_EXCL: never an existing file, nor a symlink, dangling or not;
    // O_NOFOLLOW says the latter again for readers of this line.
    const int fd = open(temporary->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        mode & 07777);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return LocalFileError(errno, StrCat("cannot write ", path));
    AtomicFile file(path, *std::move(temporary), fd, sync);
    // open() applied the umask; the caller asked for exactly `mode`.
    if (fchmod(fd, mode) != 0) return file.Failed("write", errno);
    return file;
  }
  return absl::AlreadyExistsError(StrCat("cannot write ", path, ": ", kNameAttempts,
                                         " random temporary names beside it were all taken"));
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      temporary_(std::move(other.temporary_)),
      fd_(other.fd_),
      sync_(other.sync_) {
  other.temporary_.clear();
  other.fd_ = -1;
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);
  if (!temporary_.empty()) unlink(temporary_.c_str());
}

absl::Status AtomicFile::Failed(const char* what, int err) {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (!temporary_.empty()) unlink(temporary_.c_str());
  temporary_.clear();
  return LocalFileError(err, StrCat("cannot ", what, " ", path_));
}

absl::Status AtomicFile::Append(std::string_view bytes) {
  if (fd_ < 0) return absl::FailedPreconditionError(StrCat("cannot write ", path_, ": closed"));
  while (!bytes.empty()) {
    const ssize_t n = write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Failed("write", n < 0 ? errno : EIO);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Commit() {
  if (fd_ < 0) return absl::FailedPreconditionError(StrCat("cannot write ", path_, ": closed"));
  const bool durable = sync_ == FileSync::kDurable;
  if (durable && fsync(fd_) != 0) return Failed("write", errno);
  const int closed = close(fd_);
  fd_ = -1;
  if (closed != 0) return Failed("write", errno);
  if (rename(temporary_.c_str(), path_.c_str()) != 0) return Failed("replace", errno);
  temporary_.clear();
  // The rename is durable once the directory is.
  if (durable) SyncDirectoryOf(path_);
  return absl::OkStatus();
}

}  // namespace canhazgpu
