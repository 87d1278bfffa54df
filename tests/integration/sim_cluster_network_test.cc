// The simulated cluster's pod network end to end: each pod its own
// loopback address, and an Indexed Job's ranks finding each other by the
// names of their headless Service, as a multi-node run's ranks do
// (docs/multi-node.md: MASTER_ADDR is rank 0's name).
#include <filesystem>
#include <map>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "integration/sim_cluster_fixture.h"
#include "kube/client.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const kube::ResourceRef kJobRef{"batch", "v1", "jobs", true};
const kube::ResourceRef kServiceRef{"", "v1", "services", true};

// Rank 0 listens on its own name (its pod's address) and rank 1 connects to
// it by that name; each says what it saw. Names may take a moment to
// appear (as in DNS): both retry for a minute.
constexpr char kRendezvous[] = R"(
import os, socket, time
rank = int(os.environ['JOB_COMPLETION_INDEX'])
master, port = os.environ['MASTER_ADDR'], int(os.environ['MASTER_PORT'])
deadline = time.time() + 60
def retry(what):
    while True:
        try:
            return what()
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)
me = retry(lambda: socket.gethostbyname(socket.gethostname()))
if rank == 0:
    server = socket.socket()
    server.bind((retry(lambda: socket.gethostbyname(master)), port))
    server.listen(1)
    print('rank 0 of 2 on', socket.gethostname(), 'listening on %s:%d' % server.getsockname(), flush=True)
    peer, _ = server.accept()  # from 127.0.0.1: no network namespace
    print('rank 0 heard:', peer.makefile().readline().strip(), flush=True)
    peer.sendall(('welcome from rank 0 at %s\n' % me).encode())
    peer.close()
else:
    def connect():
        return socket.create_connection((socket.gethostbyname(master), port), timeout=5)
    peer = retry(connect)
    print('rank 1 of 2 on', socket.gethostname(), 'connected to', master, peer.getpeername()[0], flush=True)
    peer.sendall(('hello from rank 1 at %s\n' % me).encode())
    print('rank 1 heard:', peer.makefile().readline().strip(), flush=True)
)";

TEST_F(SimClusterTest, AnIndexedJobsRanksFindEachOtherByTheirServicesNames) {
  if (RunProgram({"sh", "-c", "command -v python3"}, {}).exit_code != 0) {
    GTEST_SKIP() << "no python3 for the ranks' rendezvous";
  }
  if (ReadFile(Log()).find("no private mount namespace here") != std::string::npos) {
    GTEST_SKIP() << "pod names cannot resolve here: " << ReadFile(Log());
  }
  ASSERT_TRUE(client_
                  ->CreateObject(kServiceRef, "default",
                                 {{"apiVersion", "v1"},
                                  {"kind", "Service"},
                                  {"metadata", {{"name", "rdzv"}}},
                                  {"spec",
                                   {{"clusterIP", "None"},
                                    {"selector", {{"canhazgpu.dev/run", "rdzv"}}},
                                    {"publishNotReadyAddresses", true}}}})
                  .ok());
  const json container = {{"name", "main"},
                          {"image", "python"},
                          {"command", {"python3", "-c", kRendezvous}},
                          {"env",
                           {{{"name", "MASTER_ADDR"}, {"value", "rdzv-0.rdzv"}},
                            {{"name", "MASTER_PORT"}, {"value", "29500"}}}}};
  absl::StatusOr<json> job = client_->CreateObject(
      kJobRef, "default",
      {{"apiVersion", "batch/v1"},
       {"kind", "Job"},
       {"metadata", {{"name", "rdzv"}}},
       {"spec",
        {{"completions", 2},
         {"parallelism", 2},
         {"completionMode", "Indexed"},
         {"backoffLimit", 0},
         {"template",
          {{"metadata", {{"labels", {{"canhazgpu.dev/run", "rdzv"}}}}},
           {"spec",
            {{"restartPolicy", "Never"}, {"subdomain", "rdzv"}, {"containers", {container}}}}}}}}});
  ASSERT_TRUE(job.ok()) << job.status();
  auto succeeded = [&] {
    json j = client_->Get(kJobRef, "default", "rdzv").value_or(json::object());
    return j.value("/status/succeeded"_json_pointer, 0);
  };
  ASSERT_TRUE(Eventually([&] { return succeeded() == 2; }))
      << client_->Get(kJobRef, "default", "rdzv").value_or(json()).dump() << ReadFile(Log());

  absl::StatusOr<json> pods = client_->List(
      kube::kPods, "default", {.label_selector = "batch.kubernetes.io/job-name=rdzv"});
  ASSERT_TRUE(pods.ok()) << pods.status();
  std::map<std::string, json> by_index;  // the ranks' pods
  for (const json& pod : (*pods)["items"]) {
    by_index[pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]] = pod;
  }
  ASSERT_EQ(by_index.size(), 2u) << pods->dump();
  std::set<std::string> ips;
  for (const auto& [index, pod] : by_index) {
    const std::string ip = pod["status"].value("podIP", "");
    EXPECT_TRUE(ip.starts_with("127.") && ip != "127.0.0.1") << ip;
    EXPECT_EQ(pod["status"]["podIPs"], json::array({{{"ip", ip}}}));
    EXPECT_EQ(pod["status"]["hostIP"], "127.0.0.1");  // the node's
    ips.insert(ip);
  }
  ASSERT_EQ(ips.size(), 2u);
  const std::string ip0 = by_index["0"]["status"]["podIP"];
  const std::string ip1 = by_index["1"]["status"]["podIP"];
  EXPECT_EQ(Logs(by_index["0"]["metadata"]["name"]),
            "rank 0 of 2 on rdzv-0 listening on " + ip0 + ":29500\n" +
                "rank 0 heard: hello from rank 1 at " + ip1 + "\n");
  EXPECT_EQ(Logs(by_index["1"]["metadata"]["name"]),
            "rank 1 of 2 on rdzv-1 connected to rdzv-0.rdzv " + ip0 + "\n" +
                "rank 1 heard: welcome from rank 0 at " + ip0 + "\n");

  // kubectl shows each pod's own address.
  if (std::string why = NoRecentKubectl("the pods' addresses are not read with kubectl");
      !why.empty()) {
    std::cerr << why << "\n";
    return;
  }
  CliResult wide = RunProgram(
      {"kubectl", "get", "pods", "-o", "wide", "-l", "batch.kubernetes.io/job-name=rdzv"},
      {{"KUBECONFIG", cluster_dir_ + "/kubeconfig"}});
  EXPECT_EQ(wide.exit_code, 0) << wide.err;
  EXPECT_THAT(wide.out, ::testing::ContainsRegex("IP +NODE"));
  EXPECT_THAT(wide.out, HasSubstr(" " + ip0 + " "));
  EXPECT_THAT(wide.out, HasSubstr(" " + ip1 + " "));
}

}  // namespace
}  // namespace canhazgpu::testing
