#include "integration/slow_clients.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "httpfront/testing/dial_loopback.h"

namespace canhazgpu::testing {
namespace {

constexpr char kStart[] = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n";
constexpr char kLine[] = "X-Slow: 1\r\n";

int DialLoopback(int port, int guard_seconds) {
  return httpfront::testing::DialLoopback(port, "127.0.0.1", guard_seconds);
}

void SendAll(int fd, const char* data, size_t size) {
  (void)!send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
}

// The child: holds `fds` trickling; on a byte from `commands` opens one more
// connection for a whole request and sends back its answer's first line.
[[noreturn]] void Flood(int port, int* fds, int count, int commands, int answers) {
  for (int i = 0; i < count; ++i) {
    fds[i] = DialLoopback(port, 10);
    if (fds[i] < 0) _exit(1);
    SendAll(fds[i], kStart, sizeof kStart - 1);
  }
  (void)!write(answers, "r", 1);
  for (;;) {
    pollfd wait{.fd = commands, .events = POLLIN, .revents = 0};
    if (poll(&wait, 1, 200) > 0) {
      char path[256] = "";
      const ssize_t n = read(commands, path, sizeof path - 1);
      if (n <= 0) _exit(0);  // the parent is gone
      char request[512];
      const int len =
          snprintf(request, sizeof request,
                   "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", path);
      char reply[256] = "";
      const int fd = DialLoopback(port, 10);
      size_t got = 0;
      if (fd >= 0) {
        SendAll(fd, request, static_cast<size_t>(len));
        ssize_t r;
        while (got < sizeof reply - 1 &&
               (r = recv(fd, reply + got, sizeof reply - 1 - got, 0)) > 0) {
          got += static_cast<size_t>(r);
        }
        close(fd);
      }
      const char* eol = static_cast<const char*>(memchr(reply, '\r', got));
      const size_t line = eol != nullptr ? static_cast<size_t>(eol - reply) : got;
      (void)!write(answers, reply, line == 0 ? 1 : line);  // one byte: "no answer"
    }
    for (int i = 0; i < count; ++i) SendAll(fds[i], kLine, sizeof kLine - 1);
  }
}

}  // namespace

SlowClients::SlowClients(uid_t uid, int port, int count) {
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) return;
  std::vector<int> fds(static_cast<size_t>(count), -1);  // allocated before the fork
  child_ = fork();
  if (child_ == 0) {
    close(to[1]);
    close(from[0]);
    if (setgid(uid) != 0 || setuid(uid) != 0) _exit(2);
    Flood(port, fds.data(), count, to[0], from[1]);
  }
  close(to[0]);
  close(from[1]);
  to_child_ = to[1];
  from_child_ = from[0];
  if (child_ < 0) return;
  pollfd ready{.fd = from_child_, .events = POLLIN, .revents = 0};
  char byte = 0;
  started_ = poll(&ready, 1, 30'000) == 1 && read(from_child_, &byte, 1) == 1 && byte == 'r';
}

SlowClients::~SlowClients() {
  if (child_ > 0) {
    kill(child_, SIGKILL);
    waitpid(child_, nullptr, 0);
  }
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
}

std::string SlowClients::OneMore(const std::string& path) {
  if (!started_ ||
      write(to_child_, path.data(), path.size()) != static_cast<ssize_t>(path.size())) {
    return "";
  }
  pollfd ready{.fd = from_child_, .events = POLLIN, .revents = 0};
  char line[256];
  if (poll(&ready, 1, 30'000) != 1) return "";
  const ssize_t n = read(from_child_, line, sizeof line);
  return n > 1 ? std::string(line, static_cast<size_t>(n)) : "";
}

HttpGetReply HttpGet(int port, const std::string& path, std::chrono::seconds guard) {
  HttpGetReply reply;
  const int fd = DialLoopback(port, static_cast<int>(guard.count()));
  if (fd < 0) return reply;
  const std::string request =
      "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  SendAll(fd, request.data(), request.size());
  std::string raw;
  char buf[16384];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) raw.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t split = raw.find("\r\n\r\n");
  if (raw.size() < 12 || split == std::string::npos) return reply;
  reply.code = std::stoi(raw.substr(9, 3));
  reply.body = raw.substr(split + 4);
  return reply;
}

}  // namespace canhazgpu::testing
