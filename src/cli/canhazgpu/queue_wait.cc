#include "cli/canhazgpu/queue_wait.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "host/signals.h"

namespace canhazgpu::cli {
namespace {

int last_signal = 0;

// Blocks the signals that end a wait, so that they are taken only by
// sigtimedwait() between polls; restores the mask when done. Ignored ones
// (nohup's SIGHUP) are left alone: blocked, they would still be delivered.
class SignalSleeper {
 public:
  SignalSleeper() {
    sigemptyset(&set_);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
      if (!host::IsIgnored(sig)) sigaddset(&set_, sig);
    }
    sigprocmask(SIG_BLOCK, &set_, &old_);
  }
  ~SignalSleeper() { sigprocmask(SIG_SETMASK, &old_, nullptr); }
  SignalSleeper(const SignalSleeper&) = delete;
  SignalSleeper& operator=(const SignalSleeper&) = delete;

  // True when a signal arrived.
  bool Sleep(Duration d) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    struct timespec timeout = {static_cast<time_t>(ns / 1'000'000'000),
                               static_cast<long>(ns % 1'000'000'000)};
    int sig = sigtimedwait(&set_, nullptr, &timeout);
    if (sig <= 0) return false;  // timeout (or EINTR from a handled signal)
    last_signal = sig;
    return true;
  }

 private:
  sigset_t set_, old_;
};

class ProgressPrinter {
 public:
  explicit ProgressPrinter(int wanted) : tty_(isatty(STDERR_FILENO)), wanted_(wanted) {}
  ~ProgressPrinter() {
    if (tty_ && printed_) std::fprintf(stderr, "\r\033[K");
  }

  void Print(const alloc::WaitProgress& p) {
    std::string line = StrCat("canhazgpu: waiting for ", wanted_, " GPU(s): position ", p.position,
                              " of ", p.waiting, ", holding ", p.held, "/", p.wanted, ", waited ",
                              FormatDuration(p.waited));
    if (!p.blockers.empty()) line += StrCat("; held by ", Join(p.blockers, ", "));
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
  bool printed_ = false;
  alloc::WaitProgress last_;
};

}  // namespace

int SignalExitCode() { return last_signal > 0 ? 128 + last_signal : 1; }

absl::StatusOr<std::vector<int>> AcquireWithQueue(Context& ctx, store::StateStore& store,
                                                  const PoolConfig& pool,
                                                  const alloc::ReserveRequest& request,
                                                  const ParsedFlags& flags) {
  alloc::WaitOptions options;
  options.block = !flags.Has("nonblock");
  if (auto w = flags.Value("wait")) {
    ASSIGN_OR_RETURN(options.max_wait, ParseDuration(*w));
  }
  std::optional<host::ProcessInfo> self = ctx.machine->processes.Find(getpid());
  if (!self) return absl::InternalError("cannot read this process's own /proc entry");
  options.waiter = ProcessRef{self->pid, self->start_ticks};
  options.query_gpus = [&] { return QueryGpus(ctx, pool); };
  SignalSleeper sleeper;
  options.sleep = [&](Duration d) { return sleeper.Sleep(d); };
  ProgressPrinter printer(request.ids.empty() ? request.count
                                              : static_cast<int>(request.ids.size()));
  options.on_progress = [&](const alloc::WaitProgress& p) { printer.Print(p); };
  return alloc::AcquireGpus(store, ctx.caller, request, *ctx.machine, options);
}

}  // namespace canhazgpu::cli
