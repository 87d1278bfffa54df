// Who may reach the plugin's sockets (issue 29 item 9): their files and
// directories have fixed modes whatever the umask, and a connection from a
// user other than root is closed unserved even when the file lets it in.
// The refusal is checked with a real client of another uid: a child process
// that becomes a test user made with useradd, so that part runs as root only.
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubeletplugin/plugin_server.h"
#include "kubeletplugin/testing/plugin_harness.h"

namespace canhazgpu::kubeletplugin {
namespace {

using ::testing::HasSubstr;
using testing::PluginHarness;

mode_t PermissionsOf(const std::string& path) {
  struct stat info;
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

TEST(PluginServerAccessTest, SocketsAndDirectoriesHaveTheirModesWhateverTheUmask) {
  for (const mode_t mask : {mode_t{0}, mode_t{077}}) {
    PluginHarness harness;
    const mode_t old = ::umask(mask);
    auto server = harness.Start(harness.Options());
    ::umask(old);
    ASSERT_TRUE(server.ok()) << server.status();
    for (const std::string& dir : {harness.Options().registrar_dir, harness.Options().plugin_dir,
                                   harness.dir.path() + "/plugins"}) {
      EXPECT_EQ(PermissionsOf(dir), 0750u) << dir << " under umask " << mask;
    }
    for (const std::string& socket : {(*server)->registration_socket(), (*server)->dra_socket()}) {
      EXPECT_EQ(PermissionsOf(socket), 0600u) << socket << " under umask " << mask;
    }
  }
}

struct TestAccount {
  uid_t uid = 0;
  gid_t gid = 0;
};

// The test user chgtest_alice (the integration tests' too), made when
// missing; nullopt with the reason in `error` when it cannot be.
std::optional<TestAccount> EnsureAlice(std::string* error) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (const passwd* pw = ::getpwnam("chgtest_alice"); pw != nullptr) {
      return TestAccount{pw->pw_uid, pw->pw_gid};
    }
    // Another test process may be adding it at the same moment: look again.
    const int rc = std::system(
        "useradd --system --no-create-home --user-group --shell /usr/sbin/nologin chgtest_alice "
        ">/dev/null 2>&1");
    *error = "useradd chgtest_alice failed with status " + std::to_string(rc);
  }
  return std::nullopt;
}

// What a client gets on a socket, as the exit status of the child that tried.
enum ClientOutcome {
  kServed = 0,   // the server answered the HTTP/2 preface
  kRefused = 1,  // the connection was closed unanswered
  kCannotConnect = 2,
  kCannotBecomeUser = 3,
  kNoAnswer = 4,  // neither within 20 s
};

// Connects to `socket` from a child process running as `as` (as root when
// nullopt), sends an HTTP/2 client preface and reads. A gRPC server answers
// any connection it serves with its SETTINGS frame. The child makes only
// system calls: the parent has threads (gRPC's) whose locks it may inherit.
int ConnectAs(const std::string& socket, const std::optional<TestAccount>& as) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, socket.c_str(), socket.size() + 1);
  // The connection preface and an empty SETTINGS frame (RFC 9113 3.4).
  static constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";
  const pid_t child = ::fork();
  if (child == 0) {
    if (as && (::setgroups(0, nullptr) != 0 || ::setgid(as->gid) != 0 || ::setuid(as->uid) != 0)) {
      ::_exit(kCannotBecomeUser);
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    const timeval patience{.tv_sec = 20, .tv_usec = 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof(patience));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      ::_exit(kCannotConnect);
    }
    // Refused, the peer may be gone already: no SIGPIPE, the read tells.
    (void)::send(fd, kPreface, sizeof(kPreface) - 1, MSG_NOSIGNAL);
    char frame[9];
    const ssize_t n = ::recv(fd, frame, sizeof(frame), 0);
    if (n > 0) ::_exit(kServed);
    ::_exit(n == 0 || errno == ECONNRESET ? kRefused : kNoAnswer);
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// Issue 29 item 9: anyone who could connect to dra.sock could unprepare a
// pod's claim and take its GPU.
TEST(PluginServerAccessTest, AConnectionFromAUserOtherThanRootIsClosedUnserved) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root: only root can connect as another user (useradd, setuid)";
  }
  std::string error;
  const std::optional<TestAccount> alice = EnsureAlice(&error);
  ASSERT_TRUE(alice.has_value()) << error;

  PluginHarness harness;
  std::mutex mu;
  std::vector<std::string> lines;
  PluginServerOptions options = harness.Options();
  std::vector<LogLevel> levels;
  options.log = Log([&](LogLevel level, const std::string& line) {
    std::lock_guard lock(mu);
    lines.push_back(line);
    levels.push_back(level);
  });
  auto server = harness.Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  // Let the file system let her in, as a careless mode or group would: the
  // peer check alone must keep her out.
  for (const std::string& dir : {harness.dir.path(), harness.dir.path() + "/plugins",
                                 options.plugin_dir, options.registrar_dir}) {
    ASSERT_EQ(::chmod(dir.c_str(), 0755), 0) << dir;
  }
  for (const std::string& socket : {(*server)->dra_socket(), (*server)->registration_socket()}) {
    ASSERT_EQ(::chmod(socket.c_str(), 0666), 0) << socket;
    EXPECT_EQ(ConnectAs(socket, std::nullopt), kServed) << socket;
    EXPECT_EQ(ConnectAs(socket, alice), kRefused) << socket;
    // Written before the connection is closed, so there by now.
    std::lock_guard lock(mu);
    EXPECT_THAT(lines, ::testing::Contains(HasSubstr("refused a connection on " + socket +
                                                     " from uid " + std::to_string(alice->uid))));
    EXPECT_THAT(levels, ::testing::Each(LogLevel::kWarning)) << "a refusal is a warning";
  }
}

}  // namespace
}  // namespace canhazgpu::kubeletplugin
