// The official Kubernetes Python client (Debian's python3-kubernetes) as a
// second independent client of the simulated API server, beside kubectl:
// list, watch from now and from a resourceVersion, 409 on a stale update,
// 422 on an invalid object (tests/integration/official_python_client.py).
// Skipped, saying so, where the client is not installed.
#include <signal.h>

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"

namespace canhazgpu::testing {
namespace {

using ::testing::HasSubstr;

// Debian's interpreter: the one its python3-kubernetes is installed for.
constexpr char kPython[] = "/usr/bin/python3";

TEST(SimPythonClientTest, TheOfficialClientListsWatchesAndGetsTheServersErrors) {
  if (RunProgram({kPython, "-c", "import kubernetes"}, {}).exit_code != 0) {
    GTEST_SKIP() << "python3-kubernetes is not installed (scripts/setup.sh installs it): the "
                    "official Python client's tests of the simulated API server do not run";
  }
  char tmpl[] = "/tmp/sim_python_client_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string kubeconfig = dir + "/kubeconfig";
  const int server =
      SpawnUntilReady({K8SHAZGPU_SIM_BINARY, "apiserver", "--kubeconfig-out", kubeconfig}, {},
                      kubeconfig, dir + "/server.log");
  ASSERT_TRUE(std::filesystem::exists(kubeconfig)) << ReadFile(dir + "/server.log");

  CliResult r = RunProgram({kPython, PYTHON_CLIENT_SCRIPT, kubeconfig}, {{"HOME", dir}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* check : {"list", "watch from now", "watch from a resourceVersion",
                            "409 on a stale update", "422 on an invalid object"}) {
    EXPECT_THAT(r.out, HasSubstr(std::string("OK ") + check + "\n")) << r.out << r.err;
  }
  kill(server, SIGTERM);
  EXPECT_EQ(ExitCodeOf(server), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace canhazgpu::testing
