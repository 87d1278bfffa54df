// Issue 33, "Messages": what the real k8shazgpu binary says when the
// cluster cannot be reached or no kubeconfig can be read. No cluster: a
// kubeconfig naming a port where nothing listens, and one that is missing.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"

namespace canhazgpu::testing {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

size_t Occurrences(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

class K8shazgpuMessagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/k8shazgpu_messages_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (closed_fd_ >= 0) close(closed_fd_);
    fs::remove_all(dir_);
  }

  // A port on 127.0.0.1 bound by this test and not listening: a connection
  // to it is refused at once, and no other process can take it meanwhile.
  int ClosedPort() {
    closed_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_GE(closed_fd_, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(closed_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    EXPECT_EQ(getsockname(closed_fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    return ntohs(addr.sin_port);
  }

  std::string Kubeconfig(const std::string& server) {
    const std::string path = (dir_ / "kubeconfig").string();
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: sim\n"
                        << "clusters:\n- name: sim\n  cluster:\n    server: " << server << "\n"
                        << "users:\n- name: u\n  user:\n    token: t\n"
                        << "contexts:\n- name: sim\n  context:\n    cluster: sim\n    user: u\n";
    return path;
  }

  CliResult K8s(std::vector<std::string> args, const std::string& kubeconfig) {
    args.insert(args.begin(), {"timeout", "120", K8SHAZGPU_BINARY});
    return RunProgram(args, {{"HOME", dir_.string()},
                             {"KUBECONFIG", kubeconfig},
                             {"K8SHAZGPU_REQUEST_TIMEOUT_MS", "1000"}});
  }

  fs::path dir_;
  int closed_fd_ = -1;
};

// The message repeated its own prefix ("cannot reach the API server ...:
// cannot reach the API server ...: cannot list nodes ..."): one line, said
// once, by every command that reads the cluster.
TEST_F(K8shazgpuMessagesTest, AnUnreachableServerIsSaidOnceInOneLine) {
  const std::string server = "http://127.0.0.1:" + std::to_string(ClosedPort());
  const std::string kubeconfig = Kubeconfig(server);
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"status"}, {"queue"}, {"cache", "status"}}) {
    CliResult r = K8s(args, kubeconfig);
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("k8shazgpu: cannot reach the API server " + server)) << args[0];
    EXPECT_EQ(Occurrences(r.err, "cannot reach the API server"), 1u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// "no current context in no kubeconfig file" named nothing.
TEST_F(K8shazgpuMessagesTest, AMissingKubeconfigIsNamed) {
  CliResult r = K8s({"status"}, "/nonexistent");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err,
            "k8shazgpu: no kubeconfig file: KUBECONFIG names /nonexistent, which does not exist; "
            "name one with --kubeconfig or KUBECONFIG\n");
}

}  // namespace
}  // namespace canhazgpu::testing
