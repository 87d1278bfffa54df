// Test-only: runs a program (argv, no shell) with given stdin bytes and
// working directory, capturing stdout and stderr. The git tests use it to
// drive the `git` command as an independent client and to serve smart HTTP;
// product code never runs git.
//
// Thread safety: safe to call from several threads at once.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace canhazgpu::git::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when it could not start or was killed
  std::string out;
  std::string err;
};

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input = "",
                         const std::filesystem::path& cwd = {});

// `git` with a fixed identity and no user or system configuration, in `cwd`.
// Aborts the test binary with the command's stderr when git fails: test
// set-up that went wrong should not look like a product failure.
std::string Git(const std::filesystem::path& cwd, const std::vector<std::string>& args);

}  // namespace canhazgpu::git::testing
