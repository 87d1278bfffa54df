#include "cli/canhazgpu/host_mps.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli {
namespace {

// `<dir>/jobs.lock`, held for one acquire, release or recovery of the
// user's shares (see the header). MpsDaemons takes its own `lock` inside.
class UserJobsLock {
 public:
  static absl::StatusOr<UserJobsLock> Take(const std::string& dir) {
    const std::string path = StrCat(dir, "/jobs.lock");
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return absl::InternalError(StrCat("mps: ", path, ": ", std::strerror(errno)));
    while (flock(fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        const int err = errno;
        close(fd);
        return absl::InternalError(StrCat("mps: lock ", path, ": ", std::strerror(err)));
      }
    }
    return UserJobsLock(fd);
  }
  UserJobsLock(UserJobsLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  UserJobsLock& operator=(UserJobsLock&&) = delete;
  ~UserJobsLock() {
    if (fd_ >= 0) close(fd_);  // releases the flock
  }

 private:
  explicit UserJobsLock(int fd) : fd_(fd) {}
  int fd_;
};

std::string RefusedDir(const std::string& dir, const std::string& why) {
  return StrCat("mps: ", dir, " ", why,
                ": MPS is not started there (remove it, or set mps-dir; docs/sharing.md)");
}

}  // namespace

std::string UserMpsDir(const std::string& parent, uint32_t uid) {
  return StrCat(parent, parent.ends_with('/') ? "" : "/", "canhazgpu-mps-", uid);
}

absl::Status PrepareUserMpsDir(const std::string& dir, uid_t owner) {
  // mkdir never follows a symlink at the last component: one planted there
  // makes it fail with EEXIST, and lstat below tells it apart.
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        StrCat("mps: cannot create ", dir, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(StrCat("mps: ", dir, ": ", std::strerror(errno)));
  }
  if (S_ISLNK(st.st_mode)) return absl::FailedPreconditionError(RefusedDir(dir, "is a symlink"));
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(RefusedDir(dir, "is not a directory"));
  }
  if (st.st_uid != owner) {
    return absl::FailedPreconditionError(
        RefusedDir(dir, StrCat("belongs to uid ", st.st_uid, ", not to uid ", owner)));
  }
  // Ours, whatever umask made it: nobody else may reach our daemons' pipes.
  if ((st.st_mode & 077) != 0 && chmod(dir.c_str(), 0700) != 0) {
    return absl::FailedPreconditionError(
        StrCat("mps: cannot make ", dir, " private: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::vector<mps::MpsShare> SurvivingShares(
    const std::vector<Reservation>& reservations, uint32_t uid,
    const std::map<std::string, std::vector<std::string>>& on_disk) {
  std::map<std::string, std::string> gpu_of_share;
  for (const auto& [gpu, shares] : on_disk) {
    for (const std::string& share : shares) gpu_of_share[share] = gpu;
  }
  std::vector<mps::MpsShare> live;
  for (const Reservation& r : reservations) {
    if (r.uid != uid || r.kind != ReservationKind::kRun || !r.IsShare()) continue;
    auto found = gpu_of_share.find(r.share);
    if (found == gpu_of_share.end()) continue;
    live.push_back({.gpu_uuid = found->second,
                    .share_id = r.share,
                    .share_bytes = r.memory,
                    .shareable_bytes = r.shareable});
    gpu_of_share.erase(found);  // a share id is listed once
  }
  return live;
}

absl::StatusOr<std::unique_ptr<HostMps>> HostMps::Open(const HostSharing& sharing, uint32_t uid,
                                                       const alloc::Machine& machine, bool create) {
  const std::string dir = UserMpsDir(sharing.mps_dir, uid);
  struct stat st;
  if (!create && lstat(dir.c_str(), &st) != 0) {
    return absl::NotFoundError(StrCat("mps: no ", dir));
  }
  RETURN_IF_ERROR(PrepareUserMpsDir(dir, geteuid()));
  mps::MpsOptions options{.driver_root = sharing.driver_root, .state_dir = dir};
  // A driver installed elsewhere than / needs its libraries found, as the
  // node daemon's does in its container.
  if (sharing.driver_root != "/") {
    const std::string& root = sharing.driver_root;
    options.extra_env.push_back(
        {"LD_LIBRARY_PATH", StrCat(root, "/usr/lib/x86_64-linux-gnu:", root,
                                   "/usr/lib/aarch64-linux-gnu:", root, "/usr/lib64")});
  }
  return std::unique_ptr<HostMps>(new HostMps(dir, std::move(options), machine));
}

absl::StatusOr<std::vector<mps::EnvVar>> HostMps::Acquire(const mps::MpsShare& share) {
  ASSIGN_OR_RETURN(UserJobsLock lock, UserJobsLock::Take(dir_));
  return daemons_.Acquire(share);
}

absl::Status HostMps::Release(const std::string& share_id) {
  ASSIGN_OR_RETURN(UserJobsLock lock, UserJobsLock::Take(dir_));
  absl::Status released = daemons_.Release(share_id);
  return absl::IsNotFound(released) ? absl::OkStatus() : released;
}

absl::Status HostMps::Recover(store::StateStore& store, uint32_t uid,
                              const alloc::Machine& machine) {
  // Most commands of a user who once ran under MPS find nothing here.
  if (daemons_.GpusOnDisk().empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(UserJobsLock lock, UserJobsLock::Take(dir_));
  std::vector<Reservation> reservations;
  RETURN_IF_ERROR(store.Update([&](store::StateTransaction& txn) -> absl::Status {
    RETURN_IF_ERROR(alloc::ReapStale(txn, machine).status());
    ASSIGN_OR_RETURN(reservations, txn.ListReservations());
    return absl::OkStatus();
  }));
  std::map<std::string, std::vector<std::string>> on_disk;
  for (const std::string& gpu : daemons_.GpusOnDisk()) on_disk[gpu] = daemons_.Shares(gpu);
  return daemons_.Recover(SurvivingShares(reservations, uid, on_disk));
}

void RecoverOwnMps(const Context& ctx, store::StateStore& store) {
  absl::StatusOr<std::unique_ptr<HostMps>> mps =
      HostMps::Open(ctx.sharing, ctx.caller.uid, *ctx.machine, /*create=*/false);
  // No directory, or one that is not ours: nothing of ours to recover.
  if (!mps.ok()) return;
  absl::Status recovered = (*mps)->Recover(store, ctx.caller.uid, *ctx.machine);
  if (!recovered.ok()) {
    std::fprintf(stderr, "canhazgpu: warning: %s\n", std::string(recovered.message()).c_str());
  }
}

}  // namespace canhazgpu::cli
