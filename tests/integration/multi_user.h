// Multi-user integration tests: local test users (chgtest_alice, chgtest_bob)
// created with useradd when the test runs as root, and the canhazgpu binary
// run as one of them (setpriv: real and effective uid and gid, no
// supplementary groups, as a login would give). Without root the fixture
// skips with a message saying so: only root can act as another user.
//
// Users are created once per machine and kept (useradd is idempotent here:
// an existing user is reused), so parallel test processes may race to create
// them. Not thread-safe; one fixture per test.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "integration/cli_runner.h"

namespace canhazgpu::testing {

struct TestUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

// Looks `name` up, creating it (a system user without a home or a login
// shell) when missing. nullopt when it cannot, with the reason in `error`.
std::optional<TestUser> EnsureTestUser(const std::string& name, std::string* error);

// Runs `argv` (any program) as `user` with `env`.
CliResult RunProgramAs(const TestUser& user, std::vector<std::string> argv,
                       const std::map<std::string, std::string>& env = {});

// Starts `argv` (any program) as `user` without waiting (SpawnProgram); the
// pid is the program's own.
int SpawnProgramAs(const TestUser& user, std::vector<std::string> argv,
                   const std::map<std::string, std::string>& env = {});

// Runs canhazgpu `args` in `host` as `user`: a copy of the binary in the
// host's directory (the build tree may be out of another user's reach),
// with the host's environment.
CliResult RunAs(const CliHost& host, const TestUser& user, std::vector<std::string> args);

// Starts canhazgpu `args` in `host` as `user` without waiting (SpawnProgram):
// the pid is that of canhazgpu itself.
int SpawnAs(const CliHost& host, const TestUser& user, std::vector<std::string> args);

// A CliHost with two unprivileged users. Runs as root or skips.
class MultiUserTest : public ::testing::Test {
 protected:
  void SetUp() override;

  CliResult AsRoot(std::vector<std::string> args) const { return host_.Run(std::move(args)); }
  CliResult AsAlice(std::vector<std::string> args) const {
    return RunAs(host_, alice_, std::move(args));
  }
  CliResult AsBob(std::vector<std::string> args) const {
    return RunAs(host_, bob_, std::move(args));
  }
  int SpawnAsAlice(std::vector<std::string> args) const {
    return SpawnAs(host_, alice_, std::move(args));
  }

  CliHost host_;
  TestUser alice_;
  TestUser bob_;
};

}  // namespace canhazgpu::testing
