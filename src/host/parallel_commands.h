// Runs several programs at once (argv vectors, never a shell string), each
// with stdin on /dev/null and its stdout and stderr captured, and stops any
// still running at a deadline. `status --all` runs ssh to every remote host
// this way, so one slow host costs the deadline, not the sum.
#pragma once

#include <string>
#include <vector>

#include "core/duration.h"

namespace canhazgpu::host {

struct CommandOutput {
  int exit_code = -1;  // 128+N for signal N; -1 when it could not start
  std::string out;
  std::string err;
  bool timed_out = false;   // killed at the deadline
  std::string start_error;  // why it could not start
};

// Runs every argv (argv[0] looked up in PATH) concurrently; returns when all
// have ended, those past `timeout` killed with SIGKILL. Output beyond
// `max_output` bytes per stream is dropped.
std::vector<CommandOutput> RunInParallel(const std::vector<std::vector<std::string>>& commands,
                                         Duration timeout, size_t max_output = 16 << 20);

}  // namespace canhazgpu::host
