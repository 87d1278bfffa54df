#include "integration/multi_user.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace canhazgpu::testing {
namespace {

std::optional<TestUser> Lookup(const std::string& name) {
  struct passwd* pw = getpwnam(name.c_str());
  if (pw == nullptr) return std::nullopt;
  return TestUser{name, pw->pw_uid, pw->pw_gid};
}

// A copy of the binary in the host's directory: the build tree may be out of
// another user's reach.
std::string BinaryFor(const CliHost& host) {
  std::string binary = host.dir() + "/canhazgpu";
  if (!std::filesystem::exists(binary)) {
    std::filesystem::copy_file(CANHAZGPU_BINARY, binary);
    chmod(binary.c_str(), 0755);
  }
  return binary;
}

std::vector<std::string> AsUser(const TestUser& user, std::vector<std::string> argv) {
  std::vector<std::string> as = {"setpriv", "--reuid=" + std::to_string(user.uid),
                                 "--regid=" + std::to_string(user.gid), "--clear-groups", "--"};
  argv.insert(argv.begin(), as.begin(), as.end());
  return argv;
}

}  // namespace

std::optional<TestUser> EnsureTestUser(const std::string& name, std::string* error) {
  if (auto user = Lookup(name)) return user;
  // Another test process may be adding the same user (useradd then fails:
  // "already exists", or the passwd file is locked): look again, and retry.
  for (int attempt = 0; attempt < 20; ++attempt) {
    CliResult r = RunProgram({"useradd", "--system", "--no-create-home", "--user-group", "--shell",
                              "/usr/sbin/nologin", name},
                             {});
    if (auto user = Lookup(name)) return user;
    *error = "useradd " + name + " failed (exit " + std::to_string(r.exit_code) + "): " + r.err;
    usleep(100'000);
  }
  return std::nullopt;
}

CliResult RunProgramAs(const TestUser& user, std::vector<std::string> argv,
                       const std::map<std::string, std::string>& env) {
  return RunProgram(AsUser(user, std::move(argv)), env);
}

int SpawnProgramAs(const TestUser& user, std::vector<std::string> argv,
                   const std::map<std::string, std::string>& env) {
  return SpawnProgram(AsUser(user, std::move(argv)), env);
}

CliResult RunAs(const CliHost& host, const TestUser& user, std::vector<std::string> args) {
  args.insert(args.begin(), BinaryFor(host));
  return RunProgramAs(user, std::move(args), host.env());
}

int SpawnAs(const CliHost& host, const TestUser& user, std::vector<std::string> args) {
  args.insert(args.begin(), BinaryFor(host));
  return SpawnProgramAs(user, std::move(args), host.env());
}

void MultiUserTest::SetUp() {
  if (geteuid() != 0) {
    GTEST_SKIP() << "multi-user test: needs root to create and act as test users "
                    "(CI runs it as root)";
  }
  std::string error;
  std::optional<TestUser> alice = EnsureTestUser("chgtest_alice", &error);
  std::optional<TestUser> bob = EnsureTestUser("chgtest_bob", &error);
  ASSERT_TRUE(alice && bob) << error;
  alice_ = *alice;
  bob_ = *bob;
}

}  // namespace canhazgpu::testing
