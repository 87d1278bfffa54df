// canhazgpu (or k8shazgpu) on a real pseudo-terminal, for the tests of what
// it does on a terminal (run's job control, status --watch redrawing in
// place, k8shazgpu run's Ctrl-C question).
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "integration/cli_runner.h"

namespace canhazgpu::testing {

// canhazgpu started as the session leader of a fresh pseudo-terminal, the
// way a login shell's foreground command sits on an ssh terminal.
class TerminalSession {
 public:
  // `columns` > 0 gives the terminal that width (else the pty's 0x0).
  // `program` runs instead of canhazgpu when given (k8shazgpu).
  TerminalSession(const CliHost& host, std::vector<std::string> args, int columns = 0,
                  const std::string& program = CANHAZGPU_BINARY) {
    int follower = -1;
    winsize size{.ws_row = 50, .ws_col = static_cast<unsigned short>(columns)};
    if (openpty(&leader_, &follower, nullptr, nullptr, columns > 0 ? &size : nullptr) != 0) return;
    args.insert(args.begin(), program);
    pid_ = fork();
    if (pid_ == 0) {
      setsid();
      ioctl(follower, TIOCSCTTY, 0);
      for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) dup2(follower, fd);
      close(follower);
      close(leader_);
      for (const auto& [k, v] : host.env()) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(98);
    }
    close(follower);
  }
  ~TerminalSession() {
    if (leader_ >= 0) close(leader_);
    if (pid_ > 0 && !waited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // Reads the terminal until `text` has appeared (true) or ~20 s pass.
  bool WaitFor(const std::string& text) {
    return WaitUntil(
        [&](const std::string& screen) { return screen.find(text) != std::string::npos; });
  }

  // Reads the terminal until `done(screen)` (true) or ~20 s pass.
  template <typename Pred>
  bool WaitUntil(Pred done) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done(screen_)) {
      if (std::chrono::steady_clock::now() > give_up) return false;
      struct pollfd p = {leader_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[1024];
      ssize_t n = read(leader_, buf, sizeof(buf));
      if (n <= 0) return false;  // EIO: every process left the terminal
      screen_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  void Type(const std::string& keys) {
    ASSERT_EQ(write(leader_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }

  // Closes the terminal's other end: the kernel hangs up the session (SIGHUP
  // to canhazgpu and to the foreground group), as when ssh disconnects.
  void HangUp() {
    close(leader_);
    leader_ = -1;
  }

  int Wait() {
    waited_ = true;
    return ExitCodeOf(pid_);
  }

  int pid() const { return pid_; }
  const std::string& screen() const { return screen_; }

 private:
  int leader_ = -1;
  int pid_ = -1;
  bool waited_ = false;
  std::string screen_;
};

}  // namespace canhazgpu::testing
