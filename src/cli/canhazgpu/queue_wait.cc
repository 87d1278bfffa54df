#include "cli/canhazgpu/queue_wait.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "host/signals.h"
#include "store/change_watcher.h"
#include "store/share_check.h"

namespace canhazgpu::cli {
namespace {

int last_signal = 0;

// Sleeps between polls of the queue. Wakes early when another process
// commits to the state file (a GPU may have been freed: the head waiter
// takes it within milliseconds rather than at its next poll) and ends the
// wait on SIGINT / SIGTERM / SIGHUP / SIGQUIT. Those signals are blocked and
// read from a signalfd, so one arriving between two polls is not lost;
// the ones the user made us ignore (nohup's SIGHUP) are left alone, since
// a blocked signal is delivered even when ignored.
class QueueSleeper {
 public:
  explicit QueueSleeper(const std::string& state_path) : state_path_(state_path) {
    sigemptyset(&set_);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
      if (!host::IsIgnored(sig)) sigaddset(&set_, sig);
    }
    sigprocmask(SIG_BLOCK, &set_, &old_);
    signal_fd_ = signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK);
  }
  ~QueueSleeper() {
    if (signal_fd_ >= 0) close(signal_fd_);
    sigprocmask(SIG_SETMASK, &old_, nullptr);
  }
  QueueSleeper(const QueueSleeper&) = delete;
  QueueSleeper& operator=(const QueueSleeper&) = delete;

  alloc::WakeReason Sleep(Duration d) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    if (!watch_tried_) {
      // Only now, when there is a wait: most requests are served at once.
      // Without inotify (limits reached, odd file systems) polling still
      // works.
      watch_tried_ = true;
      auto watcher = store::ChangeWatcher::Watch(state_path_);
      if (watcher.ok()) {
        watcher_.emplace(std::move(*watcher));
        watcher_->KeepOpenUntilExit();
      }
    }
    int watch_fd = watcher_ ? watcher_->fd() : -1;
    struct pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {watch_fd, POLLIN, 0}};
    int ready = poll(fds, 2, static_cast<int>(std::max<int64_t>(ms, 1)));
    if (ready <= 0) return alloc::WakeReason::kTimeout;  // or EINTR: poll again
    struct signalfd_siginfo info;
    if ((fds[0].revents & POLLIN) && read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
      last_signal = static_cast<int>(info.ssi_signo);
      return alloc::WakeReason::kSignal;
    }
    if (watch_fd >= 0 && watcher_->Drain()) return alloc::WakeReason::kChanged;
    return alloc::WakeReason::kTimeout;
  }

 private:
  std::string state_path_;
  sigset_t set_, old_;
  int signal_fd_ = -1;
  bool watch_tried_ = false;
  std::optional<store::ChangeWatcher> watcher_;
};

class ProgressPrinter {
 public:
  ProgressPrinter(int wanted, std::string selector, uint64_t memory)
      : tty_(isatty(STDERR_FILENO)),
        wanted_(wanted),
        selector_(std::move(selector)),
        memory_(memory) {}
  ~ProgressPrinter() {
    if (tty_ && printed_) std::fprintf(stderr, "\r\033[K");
  }

  void Print(const alloc::WaitProgress& p) {
    std::string line =
        memory_ > 0
            // A share is taken whole or not at all: nothing to hold meanwhile,
            // and the blocker is the allocator's one-line reason.
            ? StrCat("canhazgpu: waiting for ", store::FormatBytes(memory_), " on each of ",
                     wanted_, " GPU(s)", selector_.empty() ? "" : " ", selector_, ": position ",
                     p.position, " of ", p.waiting, ", waited ", FormatDuration(p.waited),
                     p.blockers.empty() ? "" : "; ", Join(p.blockers, "; "))
            : StrCat("canhazgpu: waiting for ", wanted_, " GPU(s)", selector_.empty() ? "" : " ",
                     selector_, ": position ", p.position, " of ", p.waiting, ", holding ", p.held,
                     "/", p.wanted, ", waited ", FormatDuration(p.waited),
                     p.blockers.empty() ? "" : "; held by ", Join(p.blockers, ", "));
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
    } else if (p.position != last_.position || p.held != last_.held || !printed_) {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
    printed_ = true;
    last_ = p;
  }

 private:
  bool tty_;
  int wanted_;
  std::string selector_;
  uint64_t memory_ = 0;  // --gpu-mem: bytes per share; 0: whole GPUs
  bool printed_ = false;
  alloc::WaitProgress last_;
};

}  // namespace

int SignalExitCode() { return last_signal > 0 ? 128 + last_signal : 1; }

absl::StatusOr<std::vector<int>> AcquireWithQueue(Context& ctx, store::StateStore& store,
                                                  const PoolConfig& pool,
                                                  const alloc::ReserveRequest& request,
                                                  const ParsedFlags& flags,
                                                  std::vector<GpuInfo> gpus) {
  alloc::WaitOptions options;
  options.block = !flags.Has("nonblock");
  if (auto w = flags.Value("wait")) {
    ASSIGN_OR_RETURN(options.max_wait, ParseDuration(*w));
  }
  std::optional<host::ProcessInfo> self = ctx.machine->processes.Find(getpid());
  if (!self) return absl::InternalError("cannot read this process's own /proc entry");
  options.waiter = ProcessRef{self->pid, self->start_ticks};
  bool first_look = true;
  options.query_gpus = [&] {
    if (!first_look) return QueryGpusOrFail(ctx, pool);
    first_look = false;
    return absl::StatusOr<std::vector<GpuInfo>>(std::move(gpus));
  };
  QueueSleeper sleeper(ctx.state_path);
  options.sleep = [&](Duration d) { return sleeper.Sleep(d); };
  ProgressPrinter printer(
      request.ids.empty() ? request.count : static_cast<int>(request.ids.size()), request.selector,
      request.memory);
  options.on_progress = [&](const alloc::WaitProgress& p) { printer.Print(p); };
  return alloc::AcquireGpus(store, ctx.caller, request, *ctx.machine, options);
}

}  // namespace canhazgpu::cli
