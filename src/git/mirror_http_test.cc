// What only HTTP has: authentication against the test server's Basic-auth
// check, and a server that is not there.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/ascii.h"
#include "core/strings.h"
#include "git/mirror.h"
#include "git/testing/command.h"
#include "git/testing/git_http_server.h"
#include "git/testing/test_repo.h"
#include "git/testing/trickle_server.h"
#include "host/testing/fake_clock.h"

namespace canhazgpu::git {
namespace {

namespace fs = std::filesystem;
using ::canhazgpu::git::testing::GitHttpServer;
using ::canhazgpu::git::testing::ScopedTempDir;
using ::testing::HasSubstr;

class MirrorAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path remote = temp_.path() / "served" / "private.git";
    testing::InitBare(remote);
    const fs::path work = temp_.path() / "work";
    testing::InitWorkTree(work);
    testing::WriteFile(work / "secret.txt", "s\n");
    commit_ = testing::CommitAll(work, "first");
    testing::Git(work, {"push", "-q", remote.string(), "main"});
    server_ = std::make_unique<GitHttpServer>(temp_.path() / "served",
                                              GitHttpServer::Options{.required_token = "t0ken"});
    url_ = server_->Url("private.git");
  }

  absl::Status FetchWith(const GitCredentials* credentials) {
    absl::StatusOr<Mirror> mirror = Mirror::OpenOrCreate(temp_.path() / "cache", url_, clock_);
    if (!mirror.ok()) return mirror.status();
    FetchOptions options;
    options.credentials = credentials;
    absl::Status status = mirror->Fetch(options);
    if (status.ok()) {
      EXPECT_EQ(*mirror->Resolve("main"), commit_);
    }
    return status;
  }

  ScopedTempDir temp_{"mirror_auth_test"};
  canhazgpu::host::FakeClock clock_;
  std::unique_ptr<GitHttpServer> server_;
  std::string url_, commit_;
};

TEST_F(MirrorAuthTest, TheRightTokenIsAccepted) {
  GitCredentials token{.password = "t0ken"};
  absl::Status status = FetchWith(&token);
  EXPECT_TRUE(status.ok()) << status;
  GitCredentials basic{.username = "someone", .password = "t0ken"};
  status = FetchWith(&basic);
  EXPECT_TRUE(status.ok()) << status;
}

TEST_F(MirrorAuthTest, AWrongTokenFailsAfterOneTryWithAClearMessage) {
  GitCredentials wrong{.password = "not-it"};
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = FetchWith(&wrong);
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
  EXPECT_THAT(status.message(), HasSubstr("authentication failed for " + url_));
  // One anonymous request, one with the token: no retry loop.
  EXPECT_LE(server_->unauthorized(), 2);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST_F(MirrorAuthTest, NoCredentialsOnAProtectedRepositorySaysWhatToProvide) {
  absl::Status status = FetchWith(nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
  EXPECT_THAT(status.message(), HasSubstr(url_ + " requires authentication"));
  EXPECT_THAT(status.message(), HasSubstr("'token'"));
  EXPECT_EQ(server_->unauthorized(), 1);

  GitCredentials ssh_only{.ssh_private_key = "KEY"};
  status = FetchWith(&ssh_only);
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
  EXPECT_THAT(status.message(), HasSubstr("authentication failed for " + url_));
}

// A server that sends the fetch to another host (here the protected one,
// named differently) must not get the item's credential passed on.
TEST_F(MirrorAuthTest, ARedirectToAnotherHostGetsNoCredential) {
  GitHttpServer hop(
      temp_.path() / "served",
      GitHttpServer::Options{.redirect_to = StrCat("http://localhost:", server_->port())});
  url_ = hop.Url("private.git");
  GitCredentials token{.password = "t0ken"};
  absl::Status status = FetchWith(&token);
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
  EXPECT_THAT(status.message(), HasSubstr("sent the fetch on to http://localhost"));
  EXPECT_GE(server_->requests(), 1) << "the redirect was followed";
  EXPECT_EQ(server_->with_credentials(), 0);
  EXPECT_EQ(hop.with_credentials(), 0);
}

TEST(MirrorTls, AnUntrustedCertificateIsRefusedNotIgnored) {
  ScopedTempDir temp("mirror_tls_test");
  testing::InitBare(temp.path() / "served" / "r.git");
  testing::MakeSelfSignedCertificate(temp.path());
  GitHttpServer server(temp.path() / "served",
                       GitHttpServer::Options{.tls_certificate = temp.path() / "cert.pem",
                                              .tls_key = temp.path() / "key.pem"});
  // By name: libgit2's mbedTLS checks DNS names only, not IP addresses.
  std::string url = server.Url("r.git");
  ASSERT_EQ(url.rfind("https://127.0.0.1:", 0), 0u) << url;
  url.replace(8, 9, "localhost");
  canhazgpu::host::FakeClock clock;
  absl::StatusOr<Mirror> mirror = Mirror::OpenOrCreate(temp.path() / "cache", url, clock);
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  absl::Status status = mirror->Fetch({});
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("fetching " + url + ": "));
  EXPECT_THAT(absl::AsciiStrToLower(std::string(status.message())), HasSubstr("certificate"));
  EXPECT_EQ(server.requests(), 0);  // not one git request got through

  // Trusting that certificate (process-wide, so last in this test) makes
  // the same fetch work: what was refused was the trust, not the server.
  ASSERT_EQ(
      git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, (temp.path() / "cert.pem").c_str(), nullptr),
      0);
  status = mirror->Fetch({});
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_GT(server.requests(), 0);
}

// A port nobody listens on: bound, then closed.
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

TEST(MirrorUnreachable, NamesTheUrlAndIsUnavailable) {
  ScopedTempDir temp("mirror_unreachable_test");
  canhazgpu::host::FakeClock clock;
  const std::string url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/gone.git";
  absl::StatusOr<Mirror> mirror = Mirror::OpenOrCreate(temp.path(), url, clock);
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  absl::Status status = mirror->Fetch({});
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(status.message(), HasSubstr("fetching " + url + ": "));
  EXPECT_FALSE(mirror->LastFetch().has_value());

  absl::StatusOr<Mirror> missing =
      Mirror::OpenOrCreate(temp.path(), "file://" + (temp.path() / "nope.git").string(), clock);
  ASSERT_TRUE(missing.ok());
  absl::Status local = missing->Fetch({});
  EXPECT_FALSE(local.ok());
  EXPECT_THAT(local.message(), HasSubstr("nope.git"));
}

TEST(MirrorSlowServer, ATrickleFailsUnderTheLowSpeedLimit) {
  ScopedTempDir temp("mirror_slow_test");
  canhazgpu::host::FakeClock clock;
  testing::TrickleServer server(std::chrono::milliseconds(100));  // 10 bytes/s
  absl::StatusOr<Mirror> mirror = Mirror::OpenOrCreate(temp.path(), server.Url(), clock);
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  FetchOptions options;
  options.limits.low_speed_bytes_per_second = 100;
  options.limits.low_speed_time = std::chrono::milliseconds(1000);
  absl::Status status = mirror->Fetch(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(status.message(), HasSubstr("fetching " + server.Url()));
  EXPECT_THAT(status.message(), HasSubstr("under the low-speed limit of 100 bytes/s"));
}

TEST(MirrorSlowServer, ASilentServerStopsAtTheDeadlineAndOnCancel) {
  ScopedTempDir temp("mirror_silent_test");
  canhazgpu::host::FakeClock clock;
  {
    testing::TrickleServer server(std::chrono::milliseconds(0));  // says nothing
    absl::StatusOr<Mirror> mirror = Mirror::OpenOrCreate(temp.path() / "a", server.Url(), clock);
    ASSERT_TRUE(mirror.ok()) << mirror.status();
    FetchOptions options;
    options.limits.deadline = std::chrono::steady_clock::now();
    absl::Status status = mirror->Fetch(options);
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
    EXPECT_THAT(status.message(), HasSubstr("stopped at its deadline"));
  }
  testing::TrickleServer server(std::chrono::milliseconds(0));
  absl::StatusOr<Mirror> mirror = Mirror::OpenOrCreate(temp.path() / "b", server.Url(), clock);
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    server.WaitForClients(1);
    cancel.store(true);
  });
  FetchOptions options;
  options.cancel = &cancel;
  absl::Status status = mirror->Fetch(options);
  canceller.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
}

}  // namespace
}  // namespace canhazgpu::git
