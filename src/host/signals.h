// Signal dispositions the wrapper inherits and must hand on unchanged.
//
// canhazgpu ignores SIGPIPE for its own sake (a reader that went away must
// not kill a process that still has GPUs to give back), but the command it
// runs must start with the disposition the user's shell gave canhazgpu.
// Likewise, a signal the user made us ignore (`nohup` ignores SIGHUP, a
// background job in a script ignores SIGINT) must not be turned into an
// event: sigwait-style code receives blocked signals even when ignored.
#pragma once

namespace canhazgpu::host {

// Saves the inherited SIGPIPE action, then ignores SIGPIPE. Idempotent.
void IgnoreBrokenPipes();

// In a forked child before exec: puts back the action IgnoreBrokenPipes()
// saved. Async-signal-safe.
void RestoreInheritedSigpipe();

// True when `sig` is currently ignored (SIG_IGN).
bool IsIgnored(int sig);

}  // namespace canhazgpu::host
