#include "host/signals.h"

#include <signal.h>

namespace canhazgpu::host {
namespace {

bool saved = false;
struct sigaction inherited_sigpipe;

}  // namespace

void IgnoreBrokenPipes() {
  if (saved) return;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  if (sigaction(SIGPIPE, &ignore, &inherited_sigpipe) == 0) saved = true;
}

void RestoreInheritedSigpipe() {
  if (saved) sigaction(SIGPIPE, &inherited_sigpipe, nullptr);
}

bool IsIgnored(int sig) {
  struct sigaction current {};
  return sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN;
}

}  // namespace canhazgpu::host
