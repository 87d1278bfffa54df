// A stand-in for NVIDIA's `nvidia-cuda-mps-control`, for tests on machines
// without a GPU (docs/sharing.md, "The stand-in"). It is not MPS: it starts
// no MPS server and limits nothing. It behaves like the real program in what
// canhazgpu relies on:
//
//   nvidia-cuda-mps-control -d
//     starts a control daemon in the background and exits 0 once it is
//     listening. The daemon keeps its socket (`control`) and its pid file
//     (`nvidia-cuda-mps-control.pid`) in $CUDA_MPS_PIPE_DIRECTORY (default
//     /tmp/nvidia-mps) and appends to `control.log` in
//     $CUDA_MPS_LOG_DIRECTORY (default /var/log/nvidia-mps). A second -d on
//     the same pipe directory while the first runs fails (exit 1).
//   nvidia-cuda-mps-control
//     the client: sends each line of stdin to the daemon as one command and
//     prints the reply. Exit 1 when no daemon answers on the pipe directory.
//
// Commands: quit (the daemon removes its socket and pid file and exits),
// get_server_list (no servers: an empty reply), set/get of the default
// device pinned memory limit and of the default active thread percentage.
// Anything else gets an error line, as a typo does with the real daemon.
//
// For tests, the daemon appends what it saw to the file $FAKE_MPS_RECORD
// (when set), one event per line, each line starting with the daemon's
// CUDA_VISIBLE_DEVICES and pid:
//   <visible> <pid> start
//   <visible> <pid> env NAME=VALUE      (every CUDA_* variable it started with)
//   <visible> <pid> command <line>
// $FAKE_MPS_FAIL_START makes -d fail (exit 1) with that text on stderr.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

std::string EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

std::string PipeDir() { return EnvOr("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"); }
std::string LogDir() { return EnvOr("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps"); }
std::string SocketPath() { return PipeDir() + "/control"; }
std::string PidPath() { return PipeDir() + "/nvidia-cuda-mps-control.pid"; }

void AppendLine(const std::string& path, const std::string& line) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  std::string text = line + "\n";
  // One write per line: daemons of several GPUs append to one record.
  ssize_t ignored = write(fd, text.data(), text.size());
  (void)ignored;
  close(fd);
}

void Log(const std::string& message) {
  char stamp[64];
  time_t now = time(nullptr);
  struct tm tm_now;
  localtime_r(&now, &tm_now);
  strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm_now);
  AppendLine(LogDir() + "/control.log", std::string("[") + stamp + "] " + message);
}

void Record(const std::string& event) {
  const char* record = std::getenv("FAKE_MPS_RECORD");
  if (record == nullptr || *record == '\0') return;
  AppendLine(record,
             EnvOr("CUDA_VISIBLE_DEVICES", "-") + " " + std::to_string(getpid()) + " " + event);
}

int Connect() {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = SocketPath();
  if (path.size() >= sizeof addr.sun_path) {
    close(fd);
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// A memory amount as the real daemon takes it: digits and an optional unit.
bool IsMemoryValue(const std::string& value) {
  size_t digits = 0;
  while (digits < value.size() && std::isdigit(static_cast<unsigned char>(value[digits]))) {
    ++digits;
  }
  if (digits == 0) return false;
  std::string unit = value.substr(digits);
  return unit.empty() || unit == "K" || unit == "M" || unit == "G" || unit == "T" || unit == "KB" ||
         unit == "MB" || unit == "GB" || unit == "TB";
}

bool IsPercentage(const std::string& value) {
  char* end = nullptr;
  double pct = std::strtod(value.c_str(), &end);
  return !value.empty() && end != nullptr && *end == '\0' && pct > 0 && pct <= 100;
}

struct DaemonState {
  std::map<std::string, std::string> pinned_limits;  // device -> value
  std::string thread_percentage = "100.0";
  bool quit = false;
};

// The reply to one command line; empty for commands the real daemon answers
// with nothing.
std::string Handle(DaemonState& state, const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty()) return "";
  const std::string& verb = words[0];
  if (verb == "quit" && words.size() == 1) {
    state.quit = true;
    return "";
  }
  if (verb == "get_server_list" && words.size() == 1) return "";
  if (verb == "set_default_device_pinned_mem_limit" && words.size() == 3 &&
      IsMemoryValue(words[2])) {
    state.pinned_limits[words[1]] = words[2];
    return "";
  }
  if (verb == "get_default_device_pinned_mem_limit" && words.size() == 2) {
    auto it = state.pinned_limits.find(words[1]);
    return (it == state.pinned_limits.end() ? std::string("0") : it->second) + "\n";
  }
  if (verb == "set_default_active_thread_percentage" && words.size() == 2 &&
      IsPercentage(words[1])) {
    state.thread_percentage = words[1];
    return state.thread_percentage + "\n";
  }
  if (verb == "get_default_active_thread_percentage" && words.size() == 1) {
    return state.thread_percentage + "\n";
  }
  return "Invalid command or arguments: " + line + "\n";
}

void RemoveOwnFiles() {
  unlink(SocketPath().c_str());
  unlink(PidPath().c_str());
}

void Serve(int listen_fd) {
  DaemonState state;
  while (!state.quit) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      break;
    }
    std::string line = ReadAll(fd);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    Record("command " + line);
    Log("Command " + line);
    std::string reply = Handle(state, line);
    if (state.quit) {
      // Gone before the client hears back, as the real daemon is once `quit`
      // returns: a caller may remove the directories right away.
      RemoveOwnFiles();
      Log("Shutting down");
    }
    WriteAll(fd, reply);
    close(fd);
  }
  close(listen_fd);
}

bool DaemonRunning() {
  FILE* f = std::fopen(PidPath().c_str(), "r");
  if (f == nullptr) return false;
  long pid = 0;
  bool read = std::fscanf(f, "%ld", &pid) == 1;
  std::fclose(f);
  return read && pid > 0 && kill(static_cast<pid_t>(pid), 0) == 0;
}

int Listen() {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = SocketPath();
  if (path.size() >= sizeof addr.sun_path) {
    close(fd);
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  unlink(path.c_str());  // a socket left by a daemon that was killed
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The daemon's side after the double fork: its pid file, the record of how
// it was started, then one byte to the waiting parent, then the loop.
void RunDaemon(int listen_fd, int ready_fd) {
  AppendLine(PidPath() + ".tmp", std::to_string(getpid()));
  rename((PidPath() + ".tmp").c_str(), PidPath().c_str());
  Record("start");
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "CUDA_", 5) == 0) Record(std::string("env ") + *e);
  }
  Log("Startup");
  char ok = 1;
  ssize_t ignored = write(ready_fd, &ok, 1);
  (void)ignored;
  close(ready_fd);
  Serve(listen_fd);
  _exit(0);
}

int StartDaemon() {
  const char* fail = std::getenv("FAKE_MPS_FAIL_START");
  if (fail != nullptr && *fail != '\0') {
    std::fprintf(stderr, "%s\n", fail);
    return 1;
  }
  if (DaemonRunning()) {
    std::fprintf(stderr, "An instance of this daemon is already running\n");
    return 1;
  }
  mkdir(PipeDir().c_str(), 0755);
  mkdir(LogDir().c_str(), 0755);
  int listen_fd = Listen();
  if (listen_fd < 0) {
    std::fprintf(stderr, "Cannot create the control socket in %s: %s\n", PipeDir().c_str(),
                 std::strerror(errno));
    return 1;
  }
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return 1;
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    close(ready[0]);
    setsid();
    if (fork() != 0) _exit(0);
    int null_fd = open("/dev/null", O_RDWR);
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    dup2(null_fd, STDERR_FILENO);
    RunDaemon(listen_fd, ready[1]);
  }
  close(ready[1]);
  close(listen_fd);
  char ok = 0;
  ssize_t n;
  do n = read(ready[0], &ok, 1);
  while (n < 0 && errno == EINTR);
  close(ready[0]);
  return n == 1 && ok == 1 ? 0 : 1;
}

int RunClient() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    int fd = Connect();
    if (fd < 0) {
      std::printf("Cannot find MPS control daemon process\n");
      return 1;
    }
    WriteAll(fd, line + "\n");
    shutdown(fd, SHUT_WR);
    std::string reply = ReadAll(fd);
    close(fd);
    std::fputs(reply.c_str(), stdout);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  if (argc == 2 && std::strcmp(argv[1], "-d") == 0) return StartDaemon();
  if (argc == 1) return RunClient();
  std::fprintf(stderr, "usage: nvidia-cuda-mps-control [-d]  (canhazgpu's test stand-in)\n");
  return 1;
}
