// The dashboard server end to end: the real canhazgpu-web on a simulated
// host, spoken to over real TCP, including requests no browser would send.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <fstream>
#include <sstream>

#include "integration/cli_runner.h"
#include "integration/web_fixture.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST_F(WebTest, ApiServesStatusQueueReportAndMetrics) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "1", "--note", "</script><b>x"}).exit_code, 0);
  HttpReply status = Get("/api/status");
  ASSERT_EQ(status.code, 200) << status.body;
  EXPECT_THAT(status.headers, HasSubstr("Content-Security-Policy: default-src 'self'"));
  json s = json::parse(status.body);
  ASSERT_EQ(s["gpus"].size(), 4u);
  EXPECT_EQ(s["gpus"][0]["status"], "IN_USE");
  EXPECT_EQ(s["gpus"][0]["note"], "</script><b>x");  // JSON carries it as data

  EXPECT_EQ(json::parse(Get("/api/queue").body)["total_waiting"], 0);
  HttpReply report = Get("/api/report?days=7");
  ASSERT_EQ(report.code, 200);
  EXPECT_EQ(json::parse(report.body)["days"], 7);
  EXPECT_EQ(Get("/api/report?days=0").code, 400);
  EXPECT_EQ(Get("/api/report?days=abc").code, 400);
  EXPECT_EQ(Get("/healthz").body, "ok\n");
  HttpReply metrics = Get("/metrics");
  EXPECT_THAT(metrics.headers, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(metrics.body, HasSubstr("canhazgpu_gpus{state=\"in_use\"} 1\n"));
  EXPECT_THAT(metrics.body, HasSubstr("canhazgpu_scrape_duration_seconds "));
  EXPECT_EQ(Get("/etc/passwd").code, 404);
  EXPECT_EQ(Get("/../../etc/passwd").code, 404);
  HttpReply page = Get("/");
  EXPECT_EQ(page.code, 200);
  EXPECT_THAT(page.body, StartsWith("<!doctype html>"));
  EXPECT_EQ(Get("/app.js").code, 200);
}

TEST_F(WebTest, SurvivesMalformedRequestsSlowClientsAndManyConnections) {
  for (const std::string& junk :
       {std::string("GARBAGE\r\n\r\n"), std::string("GET / HTTP/9.9\r\n\r\n"),
        std::string("GET /api/status HTTP/1.1\r\nContent-Length: -5\r\n\r\n"),
        std::string("POST /api/status HTTP/1.1\r\nContent-Length: 100000000\r\n\r\nxx"),
        std::string(100000, 'A'), std::string("\0\1\2\3", 4)}) {
    int fd = Connect();
    ASSERT_GE(fd, 0);
    (void)!send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    ReadAll(fd);
    close(fd);
  }
  // Slow clients: connected, silent.
  std::vector<int> silent;
  for (int i = 0; i < 20; ++i) silent.push_back(Connect());
  EXPECT_EQ(Get("/healthz").code, 200);
  // 200 connections at once, each with a request; all answered.
  std::vector<int> fds;
  for (int i = 0; i < 200; ++i) {
    int fd = Connect();
    ASSERT_GE(fd, 0) << i;
    std::string req = "GET /api/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    ASSERT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    fds.push_back(fd);
  }
  int ok = 0;
  for (int fd : fds) {
    ok += ReadAll(fd).starts_with("HTTP/1.1 200");
    close(fd);
  }
  EXPECT_EQ(ok, 200);
  for (int fd : silent) close(fd);
  EXPECT_EQ(Get("/healthz").code, 200);
}

TEST_F(WebTest, StopsCleanlyOnSigterm) {
  kill(server_pid_, SIGTERM);
  EXPECT_EQ(ExitCodeOf(server_pid_), 0);
  server_pid_ = -1;
}

TEST(WebFlagsTest, BadFlagsAndNonLocalBindWarning) {
  CliHost host;
  ASSERT_EQ(host.Run({"admin", "--provider", "fake", "--gpus", "1"}).exit_code, 0);
  CliResult bad_port = host.Run({"web", "--port", "70000"});
  EXPECT_EQ(bad_port.exit_code, 2);
  EXPECT_THAT(bad_port.err, HasSubstr("expected an integer from 0 to 65535"));
  EXPECT_EQ(host.Run({"web", "--port", "http"}).exit_code, 2);
  EXPECT_EQ(host.Run({"web", "extra"}).exit_code, 2);
  // A wide bind warns on stderr before serving.
  const std::string err_path = host.dir() + "/web.err";
  int pid = host.Spawn({"web", "--host", "0.0.0.0", "--port", "0"}, {.stderr_path = err_path});
  ASSERT_TRUE(Eventually([&] { return ReadFile(err_path).find("warning") != std::string::npos; }));
  EXPECT_THAT(ReadFile(err_path), HasSubstr("listening on 0.0.0.0"));
  kill(pid, SIGTERM);
  EXPECT_EQ(ExitCodeOf(pid), 0);
}

}  // namespace
}  // namespace canhazgpu::testing
