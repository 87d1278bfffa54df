#include "store/state_file.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::store {
namespace {

constexpr const char* kCompanions[] = {"-wal", "-shm"};

absl::Status NotRegular(const std::string& path, mode_t mode) {
  const char* what = S_ISLNK(mode)   ? "a symbolic link"
                     : S_ISDIR(mode) ? "a directory"
                                     : "not a regular file";
  return absl::PermissionDeniedError(
      StrCat("state file ", path, " is ", what, "; refusing to open it"));
}

// A companion file SQLite opens by name: absent, or a regular file.
absl::Status CheckCompanion(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return absl::OkStatus();
  if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
  return absl::OkStatus();
}

// O_EXCL | O_NOFOLLOW: a file, or a link, that appeared meanwhile is an
// error, never something to write through.
absl::Status CreateExclusive(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        StrCat("cannot create state file ", path, ": ", strerror(errno)));
  }
  fchmod(fd, 0666);  // the umask must not keep other users out
  close(fd);
  return absl::OkStatus();
}

}  // namespace

std::string UserName(uid_t uid) {
  struct passwd pw;
  struct passwd* found = nullptr;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found != nullptr) {
    return found->pw_name;
  }
  return StrCat("uid ", uid);
}

absl::StatusOr<StateFileInfo> InspectStateFile(const std::string& path) {
  // lstat first, so that a device or FIFO is never even opened; then
  // O_NOFOLLOW and fstat, so that a link swapped in meanwhile is not followed.
  struct stat link;
  if (lstat(path.c_str(), &link) == 0 && !S_ISREG(link.st_mode)) {
    return NotRegular(path, link.st_mode);
  }
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    struct stat st;
    if (error == ELOOP || (lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))) {
      return NotRegular(path, error == ELOOP ? S_IFLNK : st.st_mode);
    }
    if (error == ENOENT) return absl::NotFoundError(StrCat("no state file at ", path));
    return absl::PermissionDeniedError(
        StrCat("cannot open state file ", path, ": ", strerror(error)));
  }
  struct stat st;
  int rc = fstat(fd, &st);
  close(fd);
  if (rc != 0 || !S_ISREG(st.st_mode)) return NotRegular(path, rc != 0 ? 0 : st.st_mode);
  for (const char* suffix : kCompanions) RETURN_IF_ERROR(CheckCompanion(path + suffix));
  StateFileInfo info{.owner = st.st_uid};
  // access() asks with the real uid, which is ours; EROFS and modes both count.
  info.writable = access(path.c_str(), W_OK) == 0;
  return info;
}

absl::Status CheckMayInitialize(const std::string& path, const StateFileInfo& info, uid_t caller) {
  if (info.owner == caller) return absl::OkStatus();
  if (caller == 0) {
    return absl::PermissionDeniedError(
        StrCat("state file ", path, " belongs to ", UserName(info.owner),
               ", not root: it was not created by 'canhazgpu admin' as root; remove it (and its "
               "-wal and -shm files) and run admin again"));
  }
  return absl::PermissionDeniedError(
      StrCat("state file ", path, " belongs to ", UserName(info.owner),
             ": only its owner can initialize or reinitialize the pool"));
}

absl::Status CreateStateDirectory(const std::string& path, bool* created) {
  *created = false;
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) return absl::OkStatus();
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          StrCat("state directory ", dir.string(), " is not a directory"));
    }
    if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0) {
      return absl::PermissionDeniedError(
          StrCat("state directory ", dir.string(),
                 " is writable by every user but not sticky: anyone could replace the state "
                 "file (chmod +t it)"));
    }
    return absl::OkStatus();
  }
  // Parents are made as usual; only the state directory itself is shared.
  std::error_code ec;
  std::filesystem::create_directories(dir.parent_path(), ec);
  if (mkdir(dir.c_str(), 01777) != 0) {
    return absl::PermissionDeniedError(
        StrCat("cannot create state directory ", dir.string(), ": ", strerror(errno)));
  }
  chmod(dir.c_str(), 01777);  // mkdir applies the umask
  *created = true;
  return absl::OkStatus();
}

absl::Status CreateStateFile(const std::string& path) {
  for (const char* suffix : kCompanions) {
    // A left-over WAL would be replayed into the new file: it must be our
    // own (an earlier pool of ours), and it is emptied.
    std::string companion = path + suffix;
    struct stat st;
    if (lstat(companion.c_str(), &st) != 0) continue;
    RETURN_IF_ERROR(CheckCompanion(companion));
    if (st.st_uid != geteuid()) {
      return absl::PermissionDeniedError(StrCat("state file ", companion, " belongs to ",
                                                UserName(st.st_uid),
                                                ": remove it and run admin again"));
    }
    if (truncate(companion.c_str(), 0) != 0) {
      return absl::PermissionDeniedError(
          StrCat("cannot empty state file ", companion, ": ", strerror(errno)));
    }
  }
  RETURN_IF_ERROR(CreateExclusive(path));
  for (const char* suffix : kCompanions) {
    std::string companion = path + suffix;
    if (access(companion.c_str(), F_OK) != 0) RETURN_IF_ERROR(CreateExclusive(companion));
  }
  return absl::OkStatus();
}

}  // namespace canhazgpu::store
