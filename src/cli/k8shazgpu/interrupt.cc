#include "cli/k8shazgpu/interrupt.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

std::atomic<bool> interrupted{false};
std::atomic<int> last_signal{0};
struct sigaction previous_int, previous_term;

void OnSignal(int sig) {
  last_signal.store(sig);
  interrupted.store(true);
}

}  // namespace

InterruptGuard::InterruptGuard() {
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

const std::atomic<bool>& InterruptGuard::Flag() { return interrupted; }
int InterruptGuard::Signal() { return last_signal.load(); }
void InterruptGuard::Clear() { interrupted.store(false); }
int InterruptGuard::ExitCode() { return 128 + (last_signal.load() > 0 ? last_signal.load() : 2); }

bool AskDetach(const char* kept) {
  InterruptGuard::Clear();
  for (int tries = 0; tries < 3; ++tries) {
    std::fprintf(stderr, "\nk8shazgpu: detach (%s) or delete it? [d/D] ", kept);
    std::fflush(stderr);
    std::string answer;
    while (true) {
      if (InterruptGuard::Interrupted()) return false;
      pollfd in = {STDIN_FILENO, POLLIN, 0};
      if (poll(&in, 1, 100) <= 0) continue;
      char c;
      if (read(STDIN_FILENO, &c, 1) != 1) return false;
      if (c == '\n') break;
      answer += c;
    }
    answer = std::string(Trim(answer));
    if (answer == "d") return true;
    if (answer == "D") return false;
  }
  return false;
}

}  // namespace canhazgpu::cli::k8s
