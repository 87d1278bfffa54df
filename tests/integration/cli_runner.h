// Runs the real canhazgpu binary as a child process for integration tests:
// arguments as a vector, extra environment, captured stdout/stderr and exit
// status. Each CliHost owns a temporary state directory.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace canhazgpu::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `argv` with `env` added to the current environment; optionally
// switches to `uid` first (root only), to act as another user.
CliResult RunProgram(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env,
                     std::optional<uint32_t> uid = std::nullopt);

struct SpawnOptions {
  std::string stderr_path;          // empty: the test's own stderr
  int stderr_fd = -1;               // when set, stderr goes here instead
  std::vector<int> ignore_signals;  // SIG_IGN before exec, as nohup does for SIGHUP
};

// Starts `argv` without waiting, in a new process group, stdin and stdout on
// /dev/null; returns its pid.
int SpawnProgram(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env, const SpawnOptions& options = {});

class CliHost {
 public:
  CliHost();
  ~CliHost();

  CliResult Run(std::vector<std::string> args, std::optional<uint32_t> uid = std::nullopt) const;
  int Spawn(std::vector<std::string> args, const SpawnOptions& options = {}) const;

  const std::string& dir() const { return dir_; }
  std::string state() const { return dir_ + "/state/state.db"; }
  std::string fake_host() const { return dir_ + "/state/fake-host.json"; }
  std::map<std::string, std::string>& env() { return env_; }
  const std::map<std::string, std::string>& env() const { return env_; }

 private:
  std::string dir_;
  std::map<std::string, std::string> env_;
};

// Polls `condition` every 10 ms, up to ~20 s; tests assert on the outcome,
// never on how long it took.
template <typename F>
bool Eventually(F condition) {
  for (int i = 0; i < 2000; ++i) {
    if (condition()) return true;
    usleep(10'000);
  }
  return false;
}

// The exit status of child `pid` as a shell reports it (128+N for signal N).
int ExitCodeOf(int pid);

// True once `pid` has exited (gone, or a zombie not yet reaped).
bool ProcessGone(int pid);

// The directory of this process's own cgroup v2 when this user may create
// cgroups in it (root, or a delegated subtree) - where `canhazgpu run` puts
// its jobs' cgroups; otherwise nullopt, and `why` says why not.
std::optional<std::string> WritableCgroup2(std::string* why);

std::string ReadFile(const std::string& path);

// Spawns `argv` (stderr into `log`) and waits until it has written
// `ready_file` (a server's kubeconfig) or has died; the pid either way, so
// the caller tells which by the file (and reads `log` for why).
int SpawnUntilReady(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env, const std::string& ready_file,
                    const std::string& log);

// The minor version of the kubectl on PATH (32 for 1.32), or -1 when there is
// none: the kubectl tests need 1.30 or newer.
int KubectlMinor();
// Why the kubectl tests cannot run here ("kubectl 1.30 or newer is not on
// PATH (found 1.28): <consequence>"), or "" when they can. For GTEST_SKIP.
std::string NoRecentKubectl(const std::string& consequence);
void WriteFile(const std::string& path, const std::string& text);

// The number of lines in a command's output ('\n' characters).
inline size_t LineCount(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace canhazgpu::testing
