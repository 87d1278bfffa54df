// The simulated cluster's pod network: addresses, each pod's hosts file
// kept current in place as pods and headless Services come and go, and —
// where this machine allows private mount namespaces — pods on a kubelet
// resolving each other's names.
#include "simkubelet/pod_network.h"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "core/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/json_object.h"
#include "kubeletplugin/testing/plugin_harness.h"
#include "kubesim/testing/test_api_server.h"
#include "simkubelet/kubelet.h"
#include "simkubelet/pod_sandbox.h"

namespace canhazgpu::simkubelet {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNetNs[] = "ml";
constexpr char kNetNode[] = "node-n";
constexpr uint32_t kNetBlock = (127u << 24) | (42u << 16) | (16u << 8);  // 127.42.16.0/20
const kube::ResourceRef kServiceRef{"", "v1", "services", true};

bool EventuallyOnTheNetwork(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

std::string FileText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ino_t Inode(const std::string& path) {
  struct stat st = {};
  ::stat(path.c_str(), &st);
  return st.st_ino;
}

class PodNetworkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = *kube::Client::Create(api_.Config(), {.qps = 1000, .burst = 1000});
    ASSERT_TRUE(
        client_->CreateObject(kube::kNamespaces, "", {{"metadata", {{"name", kNetNs}}}}).ok());
    std::ofstream(dir_.path() + "/machine-hosts") << "127.0.0.1 localhost\n";
    network_ = std::make_unique<PodNetwork>(
        *client_, PodNetworkOptions{.machine_hosts = dir_.path() + "/machine-hosts",
                                    .block_start = kNetBlock});
    ASSERT_TRUE(network_->Start().ok());
  }
  void TearDown() override { network_->Stop(); }

  void CreateService(const std::string& name, bool publish_not_ready = true) {
    absl::StatusOr<json> created =
        client_->CreateObject(kServiceRef, kNetNs,
                              {{"apiVersion", "v1"},
                               {"kind", "Service"},
                               {"metadata", {{"name", name}}},
                               {"spec",
                                {{"clusterIP", "None"},
                                 {"selector", {{"run", name}}},
                                 {"publishNotReadyAddresses", publish_not_ready}}}});
    ASSERT_TRUE(created.ok()) << created.status();
  }
  static PodHostEntry Rank(int index) {
    const std::string hostname = StrCat("train-", index);
    return {.uid = StrCat("uid-", index),
            .ns = kNetNs,
            .name = hostname + "-x",
            .hostname = hostname,
            .subdomain = "train",
            .labels = {{"run", "train"}}};
  }
  std::string HostsOf(int index) const { return StrCat(dir_.path(), "/pod-", index, "/etc-hosts"); }

  kubesim::TestApiServer api_;
  std::unique_ptr<kube::Client> client_;
  kubeletplugin::testing::TempDir dir_;
  std::unique_ptr<PodNetwork> network_;
};

TEST_F(PodNetworkTest, PodsGetDistinctAddressesOfTheBlockAndKeepThem) {
  EXPECT_EQ(network_->cidr(), "127.42.16.0/20");
  absl::StatusOr<std::string> a = network_->Attach(Rank(0), HostsOf(0));
  absl::StatusOr<std::string> b = network_->Attach(Rank(1), HostsOf(1));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, "127.42.16.1");
  EXPECT_EQ(*b, "127.42.16.2");
  EXPECT_EQ(*network_->Attach(Rank(0), HostsOf(0)), *a);  // the same pod again
  // Its own entry, as the kubelet writes it, after the machine's lines.
  EXPECT_THAT(FileText(HostsOf(0)),
              HasSubstr("127.0.0.1 localhost\n# This pod, as the kubelet names it.\n"
                        "127.42.16.1\ttrain-0.train.ml.svc.cluster.local\ttrain-0\n"));
  network_->Detach("uid-0");
  network_->Detach("uid-0");  // twice is nothing
  network_->Detach("never");
  EXPECT_EQ(*network_->Attach(Rank(2), HostsOf(2)), "127.42.16.3");
}

TEST_F(PodNetworkTest, HostsFilesFollowPodsAndServicesInPlace) {
  ASSERT_TRUE(network_->Attach(Rank(1), HostsOf(1)).ok());  // rank 1 first, as may happen
  const ino_t inode = Inode(HostsOf(1));
  EXPECT_THAT(FileText(HostsOf(1)), Not(HasSubstr("train-0")));
  ASSERT_TRUE(network_->Attach(Rank(0), HostsOf(0)).ok());
  // No Service yet: no cluster names.
  EXPECT_THAT(FileText(HostsOf(1)), Not(HasSubstr("train-0")));
  CreateService("train");
  ASSERT_TRUE(EventuallyOnTheNetwork([&] {
    return FileText(HostsOf(1))
               .find(
                   "127.42.16.2\ttrain-0.train.ml.svc.cluster.local\t"
                   "train-0.train.ml.svc\ttrain-0.train.ml\ttrain-0.train\n") != std::string::npos;
  })) << FileText(HostsOf(1));
  network_->Detach("uid-0");
  EXPECT_THAT(FileText(HostsOf(1)), Not(HasSubstr("train-0")));
  EXPECT_EQ(Inode(HostsOf(1)), inode);  // rewritten, never replaced
  ASSERT_TRUE(client_->Delete(kServiceRef, kNetNs, "train").ok());
  ASSERT_TRUE(EventuallyOnTheNetwork([&] {
    return FileText(HostsOf(1)).find("\ttrain.ml.svc") == std::string::npos;
  })) << FileText(HostsOf(1));
  EXPECT_EQ(Inode(HostsOf(1)), inode);
}

TEST_F(PodNetworkTest, AServiceThatWaitsForReadinessNamesOnlyReadyPods) {
  CreateService("train", /*publish_not_ready=*/false);
  ASSERT_TRUE(network_->Attach(Rank(0), HostsOf(0)).ok());
  ASSERT_TRUE(network_->Attach(Rank(1), HostsOf(1)).ok());
  // The Service may be listed before or after: wait for it by a ready pod.
  network_->SetReady("uid-0", true);
  ASSERT_TRUE(EventuallyOnTheNetwork([&] {
    return FileText(HostsOf(1)).find("train-0.train.ml.svc") != std::string::npos;
  })) << FileText(HostsOf(1));
  EXPECT_THAT(FileText(HostsOf(0)), Not(HasSubstr("train-1.train.ml.svc")));
  network_->SetReady("uid-0", false);
  EXPECT_THAT(FileText(HostsOf(1)), Not(HasSubstr("train-0.train.ml.svc")));
}

TEST_F(PodNetworkTest, ABlockThatIsNoneIsRefused) {
  PodNetwork bad(*client_, {.block_start = (127u << 24) | 1});
  absl::Status s = bad.Start();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("127.0.0.1 starts no block of 4096"));
}

// Two pods of an Indexed Job's shape on one kubelet: rank 1 starts first
// and waits for rank 0's name; both see their own hostname, and `kubectl
// exec` runs in the same sandbox.
TEST_F(PodNetworkTest, PodsOnAKubeletResolveEachOthersNames) {
  if (!network_->isolated()) {
    GTEST_SKIP() << "no private mount namespaces here: " << CheckPrivateNamespaces();
  }
  KubeletOptions options;
  options.node_name = kNetNode;
  options.registrar_dir = dir_.path() + "/registry";
  options.pods_dir = dir_.path() + "/pods";
  options.network = network_.get();
  Kubelet kubelet(*client_, api_.server().logs(), options);
  ASSERT_TRUE(kubelet.Start().ok());
  CreateService("train");
  const std::string gate = dir_.path() + "/gate";
  auto make_pod = [&](int index, const std::string& script) {
    absl::StatusOr<json> pod = client_->CreateObject(
        kube::kPods, kNetNs,
        {{"apiVersion", "v1"},
         {"kind", "Pod"},
         {"metadata", {{"name", StrCat("train-", index, "-x")}, {"labels", {{"run", "train"}}}}},
         {"spec",
          {{"nodeName", kNetNode},
           {"restartPolicy", "Never"},
           {"hostname", StrCat("train-", index)},
           {"subdomain", "train"},
           {"containers",
            {{{"name", "main"}, {"image", "busybox"}, {"command", {"sh", "-c", script}}}}}}}});
    ASSERT_TRUE(pod.ok()) << pod.status();
  };
  make_pod(1,
           "until getent hosts train-0.train; do sleep 0.05; done; echo me=$(hostname) "
           "env=$HOSTNAME");
  make_pod(0, StrCat("getent hosts train-0.train.ml.svc.cluster.local; while [ ! -e ", gate,
                     " ]; do sleep 0.05; done"));
  auto pod = [&](int index) {
    return client_->Get(kube::kPods, kNetNs, StrCat("train-", index, "-x")).value_or(json());
  };
  ASSERT_TRUE(EventuallyOnTheNetwork([&] {
    return kube::StringAt(pod(1), "/status/phase"_json_pointer) == "Succeeded";
  })) << pod(1).dump();
  const std::string ip0 = kube::StringAt(pod(0), "/status/podIP"_json_pointer);
  const std::string ip1 = kube::StringAt(pod(1), "/status/podIP"_json_pointer);
  EXPECT_TRUE(ip0.starts_with("127.42.") && ip1.starts_with("127.42.")) << ip0 << " " << ip1;
  EXPECT_NE(ip0, ip1);
  EXPECT_EQ(pod(0)["status"]["podIPs"], json::parse(StrCat(R"([{"ip":")", ip0, "\"}]")));
  EXPECT_EQ(pod(0)["status"]["hostIP"], "127.0.0.1");  // the node's
  // getent: the address, padded, then the line's names.
  EXPECT_THAT(client_->Logs(kNetNs, "train-1-x").value_or(""),
              ::testing::MatchesRegex(StrCat(ip0,
                                             " +train-0.train.ml.svc.cluster.local "
                                             "train-0.train.ml.svc train-0.train.ml train-0.train\n"
                                             "me=train-1 env=train-1\n")));
  EXPECT_THAT(client_->Logs(kNetNs, "train-0-x").value_or(""), HasSubstr(StrCat(ip0, " ")));
  std::string out;
  absl::StatusOr<int> exec =
      kubelet.Exec(kNetNs, "train-0-x", "main",
                   {"sh", "-c", "hostname; grep -c train-0.train.ml.svc.cluster.local /etc/hosts"},
                   {.output = [&](int, std::string_view data) { out.append(data); }});
  ASSERT_TRUE(exec.ok()) << exec.status();
  EXPECT_EQ(out, "train-0\n2\n");  // its own entry and the Service's line
  std::ofstream{gate};
  ASSERT_TRUE(EventuallyOnTheNetwork(
      [&] { return kube::StringAt(pod(0), "/status/phase"_json_pointer) == "Succeeded"; }));
  kubelet.Stop();
}

}  // namespace
}  // namespace canhazgpu::simkubelet
