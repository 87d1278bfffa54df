// One simulated node's k8shazgpu-node: the real binary, started the way the
// DaemonSet's pod would start it (its settings as flags, output to a log
// file), and restarted when it dies, with a growing delay, as the kubelet
// restarts a crashed pod (CrashLoopBackOff: 1 s doubling to 30 s). The
// daemon leads its own process group, so a Ctrl-C in the terminal reaches
// only the simulator, which stops it in order; and it is told SIGTERM if the
// simulator dies first (PR_SET_PDEATHSIG).
//
// Threading: Start and Stop from one thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "core/mutex.h"

namespace canhazgpu::sim {

struct NodeProcessOptions {
  std::string binary;  // k8shazgpu-node
  std::vector<std::string> args;
  std::string log_path;  // stdout and stderr, appended
  // Told each start and unexpected exit, one line each.
  std::function<void(const std::string&)> log;
};

class NodeProcess {
 public:
  explicit NodeProcess(NodeProcessOptions options) : options_(std::move(options)) {}
  ~NodeProcess() { Stop(); }
  NodeProcess(const NodeProcess&) = delete;
  NodeProcess& operator=(const NodeProcess&) = delete;

  // Starts the daemon; an error when it cannot be started at all (no such
  // binary, no log file).
  absl::Status Start();
  // SIGTERM, then SIGKILL after `grace`; waits for it. Idempotent.
  void Stop(std::chrono::milliseconds grace = std::chrono::seconds(10));

 private:
  // Forks and execs the daemon; the child's pid or -errno.
  int Spawn();
  void Supervise();

  NodeProcessOptions options_;
  std::atomic<int> pid_{0};
  Mutex mu_;
  std::condition_variable_any cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool exited_ ABSL_GUARDED_BY(mu_) = false;  // the current child was reaped
  int first_spawn_error_ ABSL_GUARDED_BY(mu_) = 0;
  bool first_spawn_done_ ABSL_GUARDED_BY(mu_) = false;
  std::thread supervisor_;
};

}  // namespace canhazgpu::sim
