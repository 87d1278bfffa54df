#include "integration/cli_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "nlohmann/json.hpp"

namespace canhazgpu::testing {
namespace {

[[noreturn]] void ExecChild(const std::vector<std::string>& argv,
                            const std::map<std::string, std::string>& env,
                            std::optional<uint32_t> uid) {
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  if (uid && setuid(*uid) != 0) _exit(99);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  _exit(98);
}

// A test runner started in the background (a non-interactive shell's `&`)
// ignores SIGINT and SIGQUIT, and a test thread may block signals; either
// would pass to the program and hide its own handling of them. A child
// gets what a terminal would give it. The parent forks with these signals
// blocked (ForkWithDefaultSignals), so one sent right after fork() waits pending
// instead of being dropped by the inherited SIG_IGN.
constexpr int kTerminalSignals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};

class BlockedForFork {
 public:
  BlockedForFork() {
    sigset_t block;
    sigemptyset(&block);
    for (int sig : kTerminalSignals) sigaddset(&block, sig);
    pthread_sigmask(SIG_BLOCK, &block, &previous_);
  }
  ~BlockedForFork() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

 private:
  sigset_t previous_;
};

void DefaultDispositions() {
  for (int sig : kTerminalSignals) signal(sig, SIG_DFL);
}

void UnblockAll() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// fork() with the terminal signals blocked; the child sets them to their
// defaults before they are unblocked, so none is lost in between.
pid_t ForkWithDefaultSignals() {
  BlockedForFork blocked;
  const pid_t pid = fork();
  if (pid == 0) DefaultDispositions();
  return pid;
}

}  // namespace

CliResult RunProgram(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env, std::optional<uint32_t> uid) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return {};
  pid_t pid = ForkWithDefaultSignals();
  if (pid == 0) {
    UnblockAll();
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, STDIN_FILENO);
    ExecChild(argv, env, uid);
  }
  close(out[1]);
  close(err[1]);
  CliResult result;
  struct pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

int SpawnProgram(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env, const SpawnOptions& options) {
  pid_t pid = ForkWithDefaultSignals();
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so a test can kill it with its children
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    int err_fd = options.stderr_fd;
    if (err_fd < 0 && !options.stderr_path.empty()) {
      err_fd = open(options.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    }
    if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
    for (int sig : options.ignore_signals) signal(sig, SIG_IGN);
    UnblockAll();
    ExecChild(argv, env, std::nullopt);
  }
  return pid;
}

int ExitCodeOf(int pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

CliHost::CliHost() {
  char tmpl[] = "/tmp/chg_cli_test.XXXXXX";
  dir_ = mkdtemp(tmpl);
  chmod(dir_.c_str(), 0755);  // other users (the "another user" tests) must reach state/
  env_["CANHAZGPU_STATE"] = state();
  env_["NO_COLOR"] = "1";
  // A developer's own ~/.canhazgpu.yaml must not leak into the tests.
  env_["HOME"] = dir_;
  // Nor the machine's MPS and cgroups into what `run --gpu-mem` gets: no
  // control program, no dmem, unless a test installs them below its own
  // directory (cli_share_isolation_test.cc).
  env_["CANHAZGPU_DRIVER_ROOT"] = dir_;
  env_["CANHAZGPU_CGROUP_ROOT"] = dir_;
}

CliHost::~CliHost() { std::filesystem::remove_all(dir_); }

CliResult CliHost::Run(std::vector<std::string> args, std::optional<uint32_t> uid) const {
  std::string binary = CANHAZGPU_BINARY;
  if (uid) {
    // Another user may not be able to reach the build tree (a checkout in a
    // 0700 directory), so they run a copy from the test's own directory.
    binary = dir_ + "/canhazgpu";
    if (!std::filesystem::exists(binary)) {
      std::filesystem::copy_file(CANHAZGPU_BINARY, binary);
      chmod(binary.c_str(), 0755);
    }
  }
  args.insert(args.begin(), binary);
  return RunProgram(args, env_, uid);
}

int CliHost::Spawn(std::vector<std::string> args, const SpawnOptions& options) const {
  args.insert(args.begin(), CANHAZGPU_BINARY);
  return SpawnProgram(args, env_, options);
}

bool ProcessGone(int pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  size_t close = stat.rfind(')');
  return close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'Z';
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

namespace {

// The field of a mountinfo line, "\040" escapes and all: test paths have none.
std::string Cgroup2MountPoint() {
  std::istringstream lines(ReadFile("/proc/self/mountinfo"));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string field; fields >> field;) f.push_back(field);
    for (size_t i = 5; i + 1 < f.size(); ++i) {
      // Only a mount of the whole hierarchy (root "/") maps paths simply.
      if (f[i] == "-" && f[i + 1] == "cgroup2" && f[3] == "/") return f[4];
    }
  }
  return "";
}

}  // namespace

std::optional<std::string> WritableCgroup2(std::string* why) {
  std::string mount = Cgroup2MountPoint();
  std::string own;
  std::istringstream lines(ReadFile("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("0::/", 0) == 0) own = line.substr(3);
  }
  if (mount.empty() || own.empty()) {
    *why = "no cgroup v2 mounted for this process (cgroup v1 only?)";
    return std::nullopt;
  }
  std::string dir = mount + (own == "/" ? "" : own);
  std::string probe = dir + "/canhazgpu-test-probe-" + std::to_string(getpid());
  if (mkdir(probe.c_str(), 0755) != 0) {
    *why = "cannot create a cgroup in " + dir + ": " + strerror(errno);
    return std::nullopt;
  }
  bool writable = access((probe + "/cgroup.procs").c_str(), W_OK) == 0;
  rmdir(probe.c_str());
  if (!writable) {
    *why = "cgroup.procs in " + dir + " is not writable";
    return std::nullopt;
  }
  return dir;
}

int SpawnUntilReady(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env, const std::string& ready_file,
                    const std::string& log) {
  const int pid = SpawnProgram(argv, env, {.stderr_path = log});
  Eventually([&] { return std::filesystem::exists(ready_file) || ProcessGone(pid); });
  return pid;
}

int KubectlMinor() {
  CliResult r = RunProgram({"kubectl", "version", "--client", "-o", "json"}, {});
  if (r.exit_code != 0) return -1;
  nlohmann::json v = nlohmann::json::parse(r.out, nullptr, false);
  if (v.is_discarded()) return -1;
  const std::string minor = v.value("/clientVersion/minor"_json_pointer, std::string());
  return minor.empty() ? -1 : std::atoi(minor.c_str());
}

std::string NoRecentKubectl(const std::string& consequence) {
  const int minor = KubectlMinor();
  if (minor >= 30) return "";
  return "kubectl 1.30 or newer is not on PATH (found " +
         (minor < 0 ? std::string("none") : "1." + std::to_string(minor)) + "): " + consequence;
}

}  // namespace canhazgpu::testing
