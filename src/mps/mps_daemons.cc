#include "mps/mps_daemons.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/file_read.h"
#include "core/file_write.h"
#include "core/make_directories.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "mps/share_limits.h"

namespace canhazgpu::mps {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPidFile = "nvidia-cuda-mps-control.pid";
// A unix socket path holds at most 107 bytes; MPS puts sockets, with names
// of its own, in the pipe directory.
constexpr size_t kMaxPipeDir = 80;

// The state directory's lock file, held for one call.
class StateLock {
 public:
  static absl::StatusOr<StateLock> Take(const std::string& state_dir) {
    RETURN_IF_ERROR(MakeDirectories(state_dir, 0755));
    std::string path = StrCat(state_dir, "/lock");
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return absl::InternalError(StrCat("mps: ", path, ": ", std::strerror(errno)));
    while (flock(fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        close(fd);
        return absl::InternalError(StrCat("mps: lock ", path, ": ", std::strerror(errno)));
      }
    }
    return StateLock(fd);
  }
  StateLock(StateLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  StateLock& operator=(StateLock&&) = delete;
  ~StateLock() {
    if (fd_ >= 0) close(fd_);  // releases the flock
  }

 private:
  explicit StateLock(int fd) : fd_(fd) {}
  int fd_;
};

std::vector<std::string> ListNames(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The first line of what a failed program said, for a one-line error.
std::string FirstLine(const ControlResult& result) {
  std::string_view text = Trim(result.err).empty() ? Trim(result.out) : Trim(result.err);
  return std::string(text.substr(0, text.find('\n')));
}

bool IsControlDaemon(const host::ProcessInfo& info) {
  if (info.state == 'Z' || info.state == 'X' || info.argv.empty()) return false;
  std::string_view name = info.argv[0];
  size_t slash = name.rfind('/');
  if (slash != std::string_view::npos) name.remove_prefix(slash + 1);
  return name == "nvidia-cuda-mps-control";
}

}  // namespace

MpsDaemons::MpsDaemons(MpsOptions options, const host::ProcessTable& processes, const Clock& clock)
    : options_(std::move(options)), processes_(processes), clock_(clock) {}

std::string MpsDaemons::GpuDir(std::string_view gpu_uuid) const {
  return StrCat(options_.state_dir, "/", gpu_uuid);
}
std::string MpsDaemons::PipeDir(std::string_view gpu_uuid) const {
  return StrCat(GpuDir(gpu_uuid), "/pipe");
}
std::string MpsDaemons::LogDir(std::string_view gpu_uuid) const {
  return StrCat(GpuDir(gpu_uuid), "/log");
}
std::string MpsDaemons::SharesDir(std::string_view gpu_uuid) const {
  return StrCat(GpuDir(gpu_uuid), "/shares");
}

std::vector<std::string> MpsDaemons::GpusOnDisk() const {
  std::vector<std::string> gpus;
  for (std::string& name : ListNames(options_.state_dir)) {
    if (name.rfind("GPU-", 0) == 0) gpus.push_back(std::move(name));
  }
  return gpus;
}

std::vector<std::string> MpsDaemons::Shares(std::string_view gpu_uuid) const {
  return ListNames(SharesDir(gpu_uuid));
}

std::optional<MpsShare> MpsDaemons::ReadShare(std::string_view gpu_uuid,
                                              std::string_view share_id) const {
  absl::StatusOr<std::string> text =
      ReadRegularFile(StrCat(SharesDir(gpu_uuid), "/", share_id), 256, "mps share");
  if (!text.ok()) return std::nullopt;
  MpsShare share{std::string(gpu_uuid), std::string(share_id), 0, 0};
  std::istringstream in(*text);
  if (!(in >> share.share_bytes >> share.shareable_bytes)) return std::nullopt;
  return share;
}

absl::StatusOr<std::string> MpsDaemons::FindShareGpu(std::string_view share_id) const {
  for (const std::string& gpu : GpusOnDisk()) {
    std::error_code ec;
    if (fs::exists(StrCat(SharesDir(gpu), "/", share_id), ec)) return gpu;
  }
  return absl::NotFoundError(StrCat("mps: no share ", EscapeForDisplay(share_id)));
}

absl::Status MpsDaemons::WriteShare(const MpsShare& share) const {
  RETURN_IF_ERROR(MakeDirectories(SharesDir(share.gpu_uuid), 0755));
  return WriteFileAtomically(StrCat(SharesDir(share.gpu_uuid), "/", share.share_id),
                             StrCat(share.share_bytes, " ", share.shareable_bytes, "\n"), 0644,
                             FileSync::kAtomicOnly);
}

std::optional<int64_t> MpsDaemons::DaemonPid(std::string_view gpu_uuid) const {
  absl::StatusOr<std::string> text =
      ReadRegularFile(StrCat(PipeDir(gpu_uuid), "/", kPidFile), 64, "mps pid file");
  int64_t pid = 0;
  if (!text.ok() || !ParseInt(Trim(*text), &pid) || pid <= 1) return std::nullopt;
  // The pid file outlives a daemon killed outright, and its pid may since
  // name another process: only a live control daemon counts.
  std::optional<host::ProcessInfo> info = processes_.Find(pid);
  if (!info || !IsControlDaemon(*info)) return std::nullopt;
  return pid;
}

absl::StatusOr<ControlResult> MpsDaemons::Tell(std::string_view gpu_uuid,
                                               const std::string& commands) const {
  std::vector<EnvVar> env = options_.extra_env;
  env.push_back({"CUDA_MPS_PIPE_DIRECTORY", PipeDir(gpu_uuid)});
  ASSIGN_OR_RETURN(ControlResult result, RunControl(ControlProgramPath(options_.driver_root), {},
                                                    env, commands, clock_, options_.timeout));
  if (result.exit_code != 0) {
    return absl::UnavailableError(StrCat("gpu ", gpu_uuid, ": mps control daemon refused (exit ",
                                         result.exit_code, "): ", FirstLine(result)));
  }
  return result;
}

absl::StatusOr<int64_t> MpsDaemons::WaitForPidFile(std::string_view gpu_uuid) const {
  // The stand-in writes its pid file before -d returns; the real program
  // may return first, so look again for a while.
  const MonoTime deadline = clock_.DeadlineAfter(options_.timeout);
  while (true) {
    if (std::optional<int64_t> pid = DaemonPid(gpu_uuid)) return *pid;
    if (clock_.MonoNow() >= deadline) {
      return absl::UnavailableError(StrCat("gpu ", gpu_uuid,
                                           ": mps control daemon started but wrote no pid file in ",
                                           PipeDir(gpu_uuid)));
    }
    clock_.SleepFor(std::chrono::milliseconds(20));
  }
}

absl::Status MpsDaemons::StartDaemon(std::string_view gpu_uuid, uint64_t shareable_bytes) const {
  // What a daemon killed outright left: its socket and pid file. A new one
  // on the same directory must not take them for a live daemon's.
  std::error_code ec;
  fs::remove_all(PipeDir(gpu_uuid), ec);
  // Other users' processes connect to the daemon's sockets: 0755, not the
  // umask's choice.
  RETURN_IF_ERROR(MakeDirectories(PipeDir(gpu_uuid), 0755));
  RETURN_IF_ERROR(MakeDirectories(LogDir(gpu_uuid), 0755));
  const std::string program = ControlProgramPath(options_.driver_root);
  std::vector<EnvVar> env = options_.extra_env;
  env.push_back({"CUDA_VISIBLE_DEVICES", std::string(gpu_uuid)});
  env.push_back({"CUDA_MPS_PIPE_DIRECTORY", PipeDir(gpu_uuid)});
  env.push_back({"CUDA_MPS_LOG_DIRECTORY", LogDir(gpu_uuid)});
  absl::StatusOr<ControlResult> started =
      RunControl(program, {"-d"}, env, "", clock_, options_.timeout);
  if (!started.ok()) {
    return absl::UnavailableError(StrCat(
        "gpu ", gpu_uuid, ": cannot start the mps control daemon: ", started.status().message()));
  }
  if (started->exit_code != 0) {
    return absl::UnavailableError(StrCat("gpu ", gpu_uuid, ": ", program, " -d failed (exit ",
                                         started->exit_code, "): ", FirstLine(*started)));
  }
  RETURN_IF_ERROR(WaitForPidFile(gpu_uuid).status());
  // The default pinned limit reaches every MPS server the daemon starts
  // from now on, and a client's own CUDA_MPS_PINNED_DEVICE_MEM_LIMIT can
  // only lower it: no client of this GPU gets past its shareable memory,
  // whatever its environment says. Device 0 is the daemon's only device
  // (CUDA_VISIBLE_DEVICES above), not an index into the host's GPUs.
  return Tell(gpu_uuid, StrCat("set_default_device_pinned_mem_limit 0 ",
                               MpsMemoryValue(shareable_bytes), "\n"))
      .status();
}

absl::Status MpsDaemons::EnsureDaemon(std::string_view gpu_uuid, uint64_t shareable_bytes) const {
  if (DaemonPid(gpu_uuid)) return absl::OkStatus();
  absl::Status started = StartDaemon(gpu_uuid, shareable_bytes);
  if (started.ok()) return started;
  // Started but would not take its limit: stop it rather than serve clients
  // without one.
  if (std::optional<int64_t> pid = DaemonPid(gpu_uuid)) {
    kill(static_cast<pid_t>(*pid), SIGKILL);
    WaitGone(*pid);
  }
  return started;
}

bool MpsDaemons::WaitGone(int64_t pid) const {
  const MonoTime deadline = clock_.DeadlineAfter(options_.timeout);
  while (true) {
    std::optional<host::ProcessInfo> info = processes_.FindBasic(pid);
    if (!info || info->state == 'Z' || info->state == 'X') return true;
    if (clock_.MonoNow() >= deadline) return false;
    clock_.SleepFor(std::chrono::milliseconds(10));
  }
}

absl::Status MpsDaemons::StopAndRemove(std::string_view gpu_uuid) const {
  absl::Status status = absl::OkStatus();
  if (std::optional<int64_t> pid = DaemonPid(gpu_uuid)) {
    absl::StatusOr<ControlResult> quit = Tell(gpu_uuid, "quit\n");
    if (!quit.ok() || !WaitGone(*pid)) {
      // A daemon that will not quit still must not outlive its GPU's
      // shares: kill it, and say so.
      kill(static_cast<pid_t>(*pid), SIGKILL);
      WaitGone(*pid);
      status = absl::UnavailableError(
          StrCat("gpu ", gpu_uuid, ": mps control daemon ", *pid, " did not quit; killed it"));
    }
  }
  std::error_code ec;
  fs::remove_all(GpuDir(gpu_uuid), ec);
  if (ec && status.ok()) {
    status = absl::InternalError(
        StrCat("gpu ", gpu_uuid, ": cannot remove ", GpuDir(gpu_uuid), ": ", ec.message()));
  }
  return status;
}

absl::Status MpsDaemons::CheckGpu(std::string_view gpu_uuid) const {
  std::vector<std::string> shares = Shares(gpu_uuid);
  if (shares.empty()) return StopAndRemove(gpu_uuid);
  if (DaemonPid(gpu_uuid)) return absl::OkStatus();
  std::optional<MpsShare> any = ReadShare(gpu_uuid, shares.front());
  if (!any) {
    return absl::DataLossError(
        StrCat("gpu ", gpu_uuid, ": unreadable share record ", shares.front()));
  }
  return EnsureDaemon(gpu_uuid, any->shareable_bytes);
}

absl::StatusOr<std::vector<EnvVar>> MpsDaemons::Acquire(const MpsShare& share) {
  RETURN_IF_ERROR(
      ValidateShare(share.gpu_uuid, share.share_id, share.share_bytes, share.shareable_bytes));
  if (PipeDir(share.gpu_uuid).size() > kMaxPipeDir) {
    return absl::InvalidArgumentError(
        StrCat("gpu ", share.gpu_uuid, ": mps pipe directory ", PipeDir(share.gpu_uuid),
               " is longer than ", kMaxPipeDir, " bytes; choose a shorter state directory"));
  }
  ASSIGN_OR_RETURN(StateLock lock, StateLock::Take(options_.state_dir));
  absl::StatusOr<std::string> held = FindShareGpu(share.share_id);
  if (held.ok() && *held != share.gpu_uuid) {
    return absl::FailedPreconditionError(
        StrCat("gpu ", share.gpu_uuid, ": share ", share.share_id, " is already on gpu ", *held));
  }
  const bool first = Shares(share.gpu_uuid).empty();
  absl::Status daemon = EnsureDaemon(share.gpu_uuid, share.shareable_bytes);
  if (!daemon.ok()) {
    if (first) StopAndRemove(share.gpu_uuid).IgnoreError();
    return daemon;
  }
  if (!held.ok()) {
    absl::Status written = WriteShare(share);
    if (!written.ok()) {
      if (first) StopAndRemove(share.gpu_uuid).IgnoreError();
      return absl::InternalError(StrCat("gpu ", share.gpu_uuid, ": ", written.message()));
    }
  }
  // A retried acquire answers with the share as first recorded.
  std::optional<MpsShare> recorded = ReadShare(share.gpu_uuid, share.share_id);
  const MpsShare& s = recorded ? *recorded : share;
  return ShareEnvironment(s.gpu_uuid, PipeDir(s.gpu_uuid), s.share_bytes, s.shareable_bytes);
}

absl::Status MpsDaemons::Release(std::string_view share_id) {
  ASSIGN_OR_RETURN(StateLock lock, StateLock::Take(options_.state_dir));
  ASSIGN_OR_RETURN(std::string gpu, FindShareGpu(share_id));
  std::error_code ec;
  fs::remove(StrCat(SharesDir(gpu), "/", share_id), ec);
  if (ec) {
    return absl::InternalError(
        StrCat("gpu ", gpu, ": cannot remove share ", share_id, ": ", ec.message()));
  }
  if (!Shares(gpu).empty()) return absl::OkStatus();
  return StopAndRemove(gpu);
}

absl::Status MpsDaemons::Check() {
  ASSIGN_OR_RETURN(StateLock lock, StateLock::Take(options_.state_dir));
  absl::Status first = absl::OkStatus();
  for (const std::string& gpu : GpusOnDisk()) {
    absl::Status status = CheckGpu(gpu);
    if (first.ok()) first = status;
  }
  return first;
}

absl::Status MpsDaemons::Recover(const std::vector<MpsShare>& live) {
  std::vector<std::string> ids;
  for (const MpsShare& share : live) {
    RETURN_IF_ERROR(
        ValidateShare(share.gpu_uuid, share.share_id, share.share_bytes, share.shareable_bytes));
    ids.push_back(share.share_id);
  }
  std::sort(ids.begin(), ids.end());
  if (auto dup = std::adjacent_find(ids.begin(), ids.end()); dup != ids.end()) {
    return absl::InvalidArgumentError(StrCat("mps: share ", *dup, " is listed twice"));
  }
  {
    ASSIGN_OR_RETURN(StateLock lock, StateLock::Take(options_.state_dir));
    for (const std::string& gpu : GpusOnDisk()) {
      std::error_code ec;
      fs::remove_all(SharesDir(gpu), ec);
    }
    for (const MpsShare& share : live) {
      absl::Status written = WriteShare(share);
      if (!written.ok()) {
        return absl::InternalError(StrCat("gpu ", share.gpu_uuid, ": ", written.message()));
      }
    }
  }
  return Check();
}

}  // namespace canhazgpu::mps
