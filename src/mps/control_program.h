// Running NVIDIA's `nvidia-cuda-mps-control` (or the tests' stand-in): the
// one documented way to talk to an MPS control daemon is that program, fed
// one command per line on stdin, so every call here is a short-lived child
// process with its output captured and a deadline. Thread-safe: each call is
// its own process.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock.h"

namespace canhazgpu::mps {

// One environment variable a process is given.
struct EnvVar {
  std::string name;
  std::string value;
};

struct ControlResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// Runs `program` with `args`, this process's environment plus `env` (which
// wins over an inherited variable of the same name), and `input` on stdin.
// Waits until it exits; past `timeout` it is killed and the call fails with
// DeadlineExceeded. A program that cannot be started is NotFound or
// PermissionDenied with the system's reason. `-d` forks a daemon that must
// not become our child (see the .cc), so a caller that is a child subreaper
// stops being one while the program runs.
absl::StatusOr<ControlResult> RunControl(const std::string& program,
                                         const std::vector<std::string>& args,
                                         const std::vector<EnvVar>& env, const std::string& input,
                                         const Clock& clock, Duration timeout);

}  // namespace canhazgpu::mps
