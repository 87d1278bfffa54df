#include "cli/k8shazgpu/interrupt.h"

#include <signal.h>

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

}  // namespace canhazgpu::cli::k8s
