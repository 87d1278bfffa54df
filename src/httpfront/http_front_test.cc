// The front against real sockets: whole requests reach the handler, slow
// clients are cut off by the request deadline, one address may hold only so
// many connections, and Stop() ends Run() whatever is open.
#include "httpfront/http_front.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/strings.h"
#include "httpfront/testing/dial_loopback.h"

namespace canhazgpu::httpfront {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using httpfront::testing::DialLoopback;

std::string ReadUntilClosed(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

std::string Request(const std::string& path, bool close) {
  return StrCat("GET ", path, " HTTP/1.1\r\nHost: localhost\r\n",
                close ? "Connection: close\r\n" : "", "\r\n");
}

// Answers with the path, closing when the request asks to.
Answer Echo(const Exchange& ex) {
  std::string_view req = ex.request;
  std::string path(req.substr(4, req.find(' ', 4) - 4));
  const bool close = req.find("Connection: close") != std::string_view::npos;
  return Answer{.bytes = StrCat("HTTP/1.1 200 OK\r\nContent-Length: ", path.size(), "\r\n",
                                close ? "Connection: close\r\n" : "", "\r\n", path),
                .close = close};
}

// Tells clients apart by address, so that one test process can be several
// clients (ClientIdentity would count them all as this process's user).
std::string ByAddress(int, const sockaddr_storage& peer, const sockaddr_storage&) {
  int port = 0;
  return AddressOf(peer, &port);
}

class HttpFrontTest : public ::testing::Test {
 protected:
  void Start(FrontLimits limits, IdentifyClient identify = ByAddress) {
    absl::StatusOr<int> fd = ListenTcp("127.0.0.1", 0);
    ASSERT_TRUE(fd.ok()) << fd.status();
    port_ = BoundPort(*fd);
    front_ = std::make_unique<HttpFront>(*fd, limits, Echo, std::move(identify));
    served_ = std::async(std::launch::async, [this] { return front_->Run(); });
  }
  // Stops the front; a Run() that does not end fails the test instead of
  // hanging it.
  void StopAndWait() {
    front_->Stop();
    if (served_.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      std::fprintf(stderr, "Run() did not end after Stop()\n");
      std::_Exit(1);
    }
    EXPECT_TRUE(served_.get().ok());
  }
  void TearDown() override {
    if (served_.valid()) StopAndWait();
  }

  int port_ = 0;
  std::unique_ptr<HttpFront> front_;
  std::future<absl::Status> served_;
};

TEST_F(HttpFrontTest, AnswersWholeRequestsInOrderOnOneConnection) {
  Start({});
  int fd = DialLoopback(port_);
  // Two pipelined requests, the second split across writes.
  const std::string both = Request("/one", false) + Request("/two", true);
  ASSERT_GT(send(fd, both.data(), 30, MSG_NOSIGNAL), 0);
  ASSERT_GT(send(fd, both.data() + 30, both.size() - 30, MSG_NOSIGNAL), 0);
  const std::string got = ReadUntilClosed(fd);
  close(fd);
  EXPECT_THAT(got, StartsWith("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n/one"));
  EXPECT_THAT(got, HasSubstr("\r\n\r\n/two"));
}

TEST_F(HttpFrontTest, TricklingClientIsCutOffAtTheRequestDeadline) {
  Start({.request_deadline = std::chrono::milliseconds(300)});
  int fd = DialLoopback(port_);
  const std::string start = "GET / HTTP/1.1\r\n";
  ASSERT_GT(send(fd, start.data(), start.size(), MSG_NOSIGNAL), 0);
  // A header line every 20 ms never completes the request; each one would
  // reset a per-read timeout. The server must close the connection anyway
  // (bounded at 1,000 lines = 20 s, so a regression fails instead of hangs).
  bool closed = false;
  for (int i = 0; i < 1000 && !closed; ++i) {
    const std::string line = "X-Slow: 1\r\n";
    closed = send(fd, line.data(), line.size(), MSG_NOSIGNAL) < 0;
    char byte;
    const ssize_t got = recv(fd, &byte, 1, MSG_DONTWAIT);
    closed = closed || got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  close(fd);
  EXPECT_TRUE(closed);
}

TEST_F(HttpFrontTest, OneClientHoldsOnlyItsShareOfConnections) {
  // One loop: connections are counted in the order they were made.
  Start({.loops = 1, .max_client_connections = 3});
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) held.push_back(DialLoopback(port_));
  // Written first, so the server has counted the three when the fourth comes.
  for (int fd : held) ASSERT_GT(send(fd, "G", 1, MSG_NOSIGNAL), 0);
  int over = DialLoopback(port_);
  EXPECT_THAT(ReadUntilClosed(over), StartsWith("HTTP/1.1 503"));
  close(over);
  // Another client is not affected.
  int other = DialLoopback(port_, "127.0.0.2");
  const std::string req = Request("/other", true);
  ASSERT_GT(send(other, req.data(), req.size(), MSG_NOSIGNAL), 0);
  EXPECT_THAT(ReadUntilClosed(other), HasSubstr("/other"));
  close(other);
  // A closed connection gives its place back.
  close(held.back());
  held.pop_back();
  std::string got;
  for (int i = 0; i < 200 && !got.ends_with("/again"); ++i) {
    int fd = DialLoopback(port_);
    const std::string again = Request("/again", true);
    (void)!send(fd, again.data(), again.size(), MSG_NOSIGNAL);
    got = ReadUntilClosed(fd);
    close(fd);
    if (!got.ends_with("/again")) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_THAT(got, HasSubstr("/again"));
  for (int fd : held) close(fd);
}

// Issue 29: when every connection is taken, a client holding fewer than
// another takes one of the biggest holder's, the longest waiting, instead
// of being refused; a client cannot take from itself.
TEST_F(HttpFrontTest, Issue29WhenAllAreTakenAClientWithFewerTakesOneFromTheBiggest) {
  // One loop: connections are counted in the order they were made.
  Start({.loops = 1, .max_client_connections = 100, .max_connections = 6});
  std::vector<int> flood;
  for (int i = 0; i < 6; ++i) {
    flood.push_back(DialLoopback(port_));
    ASSERT_GT(send(flood.back(), "G", 1, MSG_NOSIGNAL), 0);
  }
  // Another client is served, on a connection it keeps.
  int other = DialLoopback(port_, "127.0.0.2");
  const std::string req = Request("/other", false);
  ASSERT_GT(send(other, req.data(), req.size(), MSG_NOSIGNAL), 0);
  const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n/other";
  std::string got(answer.size(), '\0');
  EXPECT_EQ(recv(other, got.data(), got.size(), MSG_WAITALL), static_cast<ssize_t>(got.size()));
  EXPECT_EQ(got, answer);
  // The flooder's oldest connection made room, without an answer.
  EXPECT_EQ(ReadUntilClosed(flood.front()), "");
  // Its next one finds nobody holding more than it does.
  int again = DialLoopback(port_);
  EXPECT_THAT(ReadUntilClosed(again), StartsWith("HTTP/1.1 503"));
  close(again);
  close(other);
  for (int fd : flood) close(fd);
}

// Issue 29: every local user reaches the front from 127.0.0.1, so one
// user's connections, counted by address, locked out all the others.
TEST_F(HttpFrontTest, Issue29LocalUsersAreCountedApartByUid) {
  if (geteuid() != 0) GTEST_SKIP() << "only root can connect as another user";
  // Forked before the front's threads start. As nobody, the child takes all
  // three connections a client may hold, then says whether a fourth was
  // refused.
  int to_child[2], from_child[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(from_child), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(to_child[1]);  // or the wait below never sees the parent close it
    int port = 0;
    if (setgid(65534) != 0 || setuid(65534) != 0 ||
        read(to_child[0], &port, sizeof port) != sizeof port) {
      _exit(2);
    }
    for (int i = 0; i < 3; ++i) (void)!send(DialLoopback(port), "G", 1, MSG_NOSIGNAL);
    char refused = ReadUntilClosed(DialLoopback(port)).starts_with("HTTP/1.1 503") ? 1 : 0;
    (void)!write(from_child[1], &refused, 1);
    (void)!read(to_child[0], &port, 1);  // until the parent is done
    _exit(0);
  }
  Start({.loops = 1, .max_client_connections = 3}, ClientIdentity);
  ASSERT_EQ(write(to_child[1], &port_, sizeof port_), static_cast<ssize_t>(sizeof port_));
  char refused = 0;
  EXPECT_EQ(read(from_child[0], &refused, 1), 1);
  EXPECT_EQ(refused, 1);
  // This process's user, from the same address, is served.
  int mine = DialLoopback(port_);
  const std::string req = Request("/mine", true);
  ASSERT_GT(send(mine, req.data(), req.size(), MSG_NOSIGNAL), 0);
  EXPECT_THAT(ReadUntilClosed(mine), HasSubstr("/mine"));
  close(mine);
  close(to_child[1]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (int fd : {to_child[0], from_child[0], from_child[1]}) close(fd);
}

TEST_F(HttpFrontTest, StopEndsRunWhateverIsOpen) {
  Start({.max_client_connections = 500});
  std::vector<int> open;
  for (int i = 0; i < 200; ++i) {
    int fd = DialLoopback(port_);
    ASSERT_GE(fd, 0);
    (void)!send(fd, "GET / HTTP/1.1\r\n", 16, MSG_NOSIGNAL);
    open.push_back(fd);
  }
  StopAndWait();
  // Every connection was closed by the server, and no new one is taken.
  for (int fd : open) {
    EXPECT_EQ(ReadUntilClosed(fd), "");
    close(fd);
  }
  EXPECT_EQ(DialLoopback(port_), -1);
}

TEST(ListenTcpTest, APortInUseIsAnErrorThatSaysSo) {
  absl::StatusOr<int> first = ListenTcp("127.0.0.1", 0);
  ASSERT_TRUE(first.ok());
  const int port = BoundPort(*first);
  absl::StatusOr<int> second = ListenTcp("127.0.0.1", port);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().message(), StrCat("127.0.0.1:", port, ": address already in use"));
  close(*first);
  absl::StatusOr<int> bad = ListenTcp("no-such-host.invalid", 80);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), StartsWith("no-such-host.invalid:80: "));
}

}  // namespace
}  // namespace canhazgpu::httpfront
