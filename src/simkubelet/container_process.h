// One container of the simulated kubelet, run as a local process: its
// command is started directly (fork and exec, argv[0] found in this
// process's PATH as posix_spawnp finds it; no shell; the image is ignored)
// in its own process group, in its work directory, with exactly the
// environment given, and — when the spec has one — in its pod's sandbox
// (pod_sandbox.h: private mount and UTS namespaces, the pod's hosts file
// over /etc/hosts). Its stdout and stderr are handed over line by line
// while it runs. When the main process exits, what is left of its group is
// killed, as a runtime ends the rest of a container's cgroup.
//
// Threading: one thread per process watches its output and its exit (a
// pidfd, not a poll); Signal() and Wait() may be called from any thread.
// The destructor kills the group and joins the thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "simkubelet/pod_sandbox.h"

namespace canhazgpu::simkubelet {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::vector<std::string> env;   // "NAME=value"
  std::string work_dir;
  // stdin: /dev/null, or what WriteInput() writes (`kubectl exec -i`).
  bool stdin_pipe = false;
  // A terminal (`kubectl exec -t`): stdin, stdout and stderr are one
  // pseudo-terminal, the process leads its own session with it as its
  // controlling terminal, and output is handed over as it comes (as
  // "stdout"), not line by line.
  bool tty = false;
  // The pod's hosts file and hostname; empty: the machine's.
  PodSandbox sandbox;
};

struct ProcessExit {
  int exit_code = 0;  // 128 + the signal when a signal ended it
  int signal = 0;     // 0 when it exited
};

class ContainerProcess {
 public:
  // `on_output(stream, line)`: stream is "stdout" or "stderr", the line ends
  // with its newline (the last one may not); `on_exit` runs once all output
  // was handed over. Both on the process's thread.
  using OutputHandler = std::function<void(std::string_view stream, std::string_view line)>;
  using ExitHandler = std::function<void(const ProcessExit&)>;

  // Errors carry the runtime's wording for a command that cannot run:
  // `exec: "nope": executable file not found in $PATH`, or the sandbox
  // step that failed.
  static absl::StatusOr<std::unique_ptr<ContainerProcess>> Start(const ProcessSpec& spec,
                                                                 OutputHandler on_output,
                                                                 ExitHandler on_exit);
  ~ContainerProcess();
  ContainerProcess(const ContainerProcess&) = delete;
  ContainerProcess& operator=(const ContainerProcess&) = delete;

  int pid() const { return pid_; }
  // Writes to the process's stdin (ProcessSpec::stdin_pipe or tty); false
  // once it cannot take more (closed, or the process is gone).
  bool WriteInput(std::string_view data);
  // Ends its stdin (a terminal gets end-of-file, ^D).
  void CloseInput();
  // Sends `signal` to the whole process group (no-op once it ended).
  void Signal(int signal);
  // The exit, once the process ended and its output was handed over;
  // nullopt if that did not happen within `timeout`.
  std::optional<ProcessExit> Wait(std::chrono::milliseconds timeout);

 private:
  explicit ContainerProcess(int input_fd) : input_fd_(input_fd) {}
  void Run(int out_fd, int err_fd, int pid_fd);
  // Waits for the exited main process and kills what it left running.
  ProcessExit ReapMainProcess();

  int pid_ = -1;
  bool raw_output_ = false;  // a terminal's output: chunks, not lines
  Mutex input_mu_;
  int input_fd_ ABSL_GUARDED_BY(input_mu_) = -1;
  OutputHandler on_output_;
  ExitHandler on_exit_;
  Mutex mu_;
  std::condition_variable_any done_cv_;
  bool reaped_ ABSL_GUARDED_BY(mu_) = false;  // the pid may be reused after this
  std::optional<ProcessExit> exit_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace canhazgpu::simkubelet
