// A canhazgpu dashboard on a simulated 4-GPU host (or `web --demo`),
// started on a free port, and a minimal HTTP/1.1 client over a real TCP
// socket.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "httpfront/testing/dial_loopback.h"
#include "integration/cli_runner.h"

namespace canhazgpu::testing {

struct HttpReply {
  int code = 0;
  std::string headers;
  std::string body;
};

class WebTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Demo()) {
      ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "4"}).exit_code, 0);
    }
    BeforeStart();
    const std::string out_path = host_.dir() + "/web.out";
    // stdout to a file through a shell redirection-free spawn: the binary
    // prints its URL there.
    std::vector<std::string> argv = {
        "/bin/sh",        "-c",     "out=$1; shift; exec \"$0\" \"$@\" > \"$out\"",
        CANHAZGPU_BINARY, out_path, "web",
        "--port",         "0"};
    if (Demo()) argv.push_back("--demo");
    server_pid_ = SpawnProgram(argv, host_.env());
    ASSERT_TRUE(
        Eventually([&] { return ReadFile(out_path).find("http://") != std::string::npos; }));
    std::string out = ReadFile(out_path);
    size_t colon = out.find(':', out.find("http://") + 7);
    port_ = std::stoi(out.substr(colon + 1));
  }
  // Runs before the server starts (a config file, say).
  virtual void BeforeStart() {}
  // `web --demo`, on a host where `admin` never ran.
  virtual bool Demo() const { return false; }
  void TearDown() override {
    if (server_pid_ > 0) {
      kill(server_pid_, SIGTERM);
      ExitCodeOf(server_pid_);
    }
  }

  // Connects from `from`: every 127.0.0.0/8 address is this machine's, so a
  // test can be several clients.
  int Connect(const char* from = "127.0.0.1") const {
    return httpfront::testing::DialLoopback(port_, from, /*guard_seconds=*/30);
  }

  static std::string ReadAll(int fd) {
    std::string out;
    char buf[65536];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }

  HttpReply Get(const std::string& path, const std::string& host = "127.0.0.1",
                const char* from = "127.0.0.1") const {
    HttpReply reply;
    int fd = Connect(from);
    if (fd < 0) return reply;
    std::string req =
        "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
    (void)!send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    std::string raw = ReadAll(fd);
    close(fd);
    size_t split = raw.find("\r\n\r\n");
    if (raw.size() < 12 || split == std::string::npos) return reply;
    reply.code = std::stoi(raw.substr(9, 3));
    reply.headers = raw.substr(0, split);
    reply.body = raw.substr(split + 4);
    return reply;
  }

  CliHost host_;
  int server_pid_ = -1;
  int port_ = 0;
};

}  // namespace canhazgpu::testing
