// What each simulated pod finds in its /etc/hosts: the machine's lines,
// its own entry as the kubelet writes it, and the names the cluster DNS
// gives the pods of headless Services.
#include "simkubelet/pod_hosts.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::simkubelet {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kMachine[] = "127.0.0.1 localhost\n::1 localhost ip6-localhost";

PodHostEntry Rank(const std::string& ns, int index, const std::string& ip, bool ready = true) {
  const std::string name = "train-" + std::to_string(index);
  return {.uid = "uid-" + ns + name,
          .ns = ns,
          .name = name + "-abcde",
          .hostname = name,
          .subdomain = "train",
          .labels = {{"canhazgpu.dev/run", "train"}},
          .ip = ip,
          .ready = ready};
}

HeadlessService Ranks(const std::string& ns, bool publish_not_ready = true) {
  return {.ns = ns,
          .name = "train",
          .selector = {{"canhazgpu.dev/run", "train"}},
          .publish_not_ready = publish_not_ready};
}

TEST(PodHostsTest, HostnameIsSpecHostnameElseTheNameCutAsTheKubeletCutsIt) {
  EXPECT_EQ(PodHostname({{"metadata", {{"name", "p"}}}, {"spec", {{"hostname", "h"}}}}), "h");
  EXPECT_EQ(PodHostname({{"metadata", {{"name", "p"}}}, {"spec", json::object()}}), "p");
  const std::string long_name = std::string(62, 'a') + "-b";
  EXPECT_EQ(PodHostname({{"metadata", {{"name", long_name}}}}), std::string(62, 'a'));
  EXPECT_EQ(PodHostname({{"metadata", {{"name", 7}}}}), "");
}

TEST(PodHostsTest, EntryOfAPodTakesItsNamesAndStringLabels) {
  const PodHostEntry e =
      PodHostEntryOf({{"metadata",
                       {{"name", "train-0-x"},
                        {"namespace", "ml"},
                        {"uid", "u"},
                        {"labels", {{"a", "b"}, {"n", 1}}}}},
                      {"spec", {{"hostname", "train-0"}, {"subdomain", "train"}}}});
  EXPECT_EQ(e.uid, "u");
  EXPECT_EQ(e.ns, "ml");
  EXPECT_EQ(e.name, "train-0-x");
  EXPECT_EQ(e.hostname, "train-0");
  EXPECT_EQ(e.subdomain, "train");
  EXPECT_EQ(e.labels, (std::map<std::string, std::string>{{"a", "b"}}));
  EXPECT_TRUE(e.ip.empty());
  EXPECT_FALSE(e.ready);
}

TEST(PodHostsTest, OnlyASelectingServiceWithoutClusterIpIsHeadless) {
  const json headless = {
      {"metadata", {{"name", "train"}, {"namespace", "ml"}}},
      {"spec",
       {{"clusterIP", "None"}, {"selector", {{"run", "t"}}}, {"publishNotReadyAddresses", true}}}};
  std::optional<HeadlessService> s = HeadlessServiceOf(headless);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->ns, "ml");
  EXPECT_EQ(s->name, "train");
  EXPECT_EQ(s->selector, (std::map<std::string, std::string>{{"run", "t"}}));
  EXPECT_TRUE(s->publish_not_ready);
  json with_ip = headless;
  with_ip["spec"]["clusterIP"] = "10.96.0.7";
  EXPECT_FALSE(HeadlessServiceOf(with_ip).has_value());
  json no_selector = headless;
  no_selector["spec"].erase("selector");
  EXPECT_FALSE(HeadlessServiceOf(no_selector).has_value());
  json odd = headless;
  odd["spec"]["publishNotReadyAddresses"] = "yes";
  EXPECT_FALSE(HeadlessServiceOf(odd)->publish_not_ready);
}

TEST(PodHostsTest, APodSeesTheMachineItselfAndTheRanksByEveryName) {
  const std::vector<PodHostEntry> pods = {Rank("ml", 1, "127.42.16.2"),
                                          Rank("ml", 0, "127.42.16.1")};
  EXPECT_EQ(PodHostsFile(kMachine, pods[0], pods, {Ranks("ml")}),
            "# Kubernetes-managed hosts file (the simulated cluster's: "
            "src/simkubelet/pod_hosts.h).\n"
            "127.0.0.1 localhost\n::1 localhost ip6-localhost\n"
            "# This pod, as the kubelet names it.\n"
            "127.42.16.2\ttrain-1.train.ml.svc.cluster.local\ttrain-1\n"
            "# The pods behind headless Services, as the cluster DNS names them.\n"
            "127.42.16.1\ttrain-0.train.ml.svc.cluster.local\ttrain-0.train.ml.svc\t"
            "train-0.train.ml\ttrain-0.train\n"
            "127.42.16.2\ttrain-1.train.ml.svc.cluster.local\ttrain-1.train.ml.svc\t"
            "train-1.train.ml\ttrain-1.train\n"
            "127.42.16.1\ttrain.ml.svc.cluster.local\ttrain.ml.svc\ttrain.ml\ttrain\n"
            "127.42.16.2\ttrain.ml.svc.cluster.local\ttrain.ml.svc\ttrain.ml\ttrain\n");
}

TEST(PodHostsTest, APodWithoutSubdomainIsItsHostnameAlone) {
  PodHostEntry pod = Rank("ml", 0, "127.42.16.1");
  pod.subdomain.clear();
  pod.hostname = "web-7f9c";
  const std::string file = PodHostsFile("", pod, {pod}, {Ranks("ml")});
  EXPECT_THAT(file, HasSubstr("# This pod, as the kubelet names it.\n127.42.16.1\tweb-7f9c\n"));
  // Selected by the Service, but without the subdomain it has no name there.
  EXPECT_THAT(file, Not(HasSubstr("web-7f9c.train")));
  EXPECT_THAT(file, HasSubstr("127.42.16.1\ttrain.ml.svc.cluster.local"));
}

TEST(PodHostsTest, NotReadyPodsAreNamedOnlyWhereTheServicePublishesThem) {
  const std::vector<PodHostEntry> pods = {Rank("ml", 0, "127.42.16.1", /*ready=*/false),
                                          Rank("ml", 1, "127.42.16.2", /*ready=*/true)};
  const std::string unpublished = PodHostsFile("", pods[1], pods, {Ranks("ml", false)});
  EXPECT_THAT(unpublished, Not(HasSubstr("train-0.train")));
  EXPECT_THAT(unpublished, HasSubstr("127.42.16.2\ttrain-1.train.ml.svc.cluster.local"));
  EXPECT_THAT(PodHostsFile("", pods[1], pods, {Ranks("ml", true)}),
              HasSubstr("127.42.16.1\ttrain-0.train.ml.svc.cluster.local"));
}

TEST(PodHostsTest, PodsWithoutAddressOrOutsideTheSelectorOrNamespaceAreNotTheServices) {
  PodHostEntry unselected = Rank("ml", 2, "127.42.16.3");
  unselected.labels = {{"canhazgpu.dev/run", "other"}};
  const PodHostEntry no_address = Rank("ml", 3, "");
  const PodHostEntry elsewhere = Rank("dev", 4, "127.42.16.5");
  const PodHostEntry viewer = Rank("ml", 0, "127.42.16.1");
  const std::string file =
      PodHostsFile("", viewer, {viewer, unselected, no_address, elsewhere}, {Ranks("ml")});
  EXPECT_THAT(file, Not(HasSubstr("train-2.train")));
  EXPECT_THAT(file, Not(HasSubstr("train-3.train")));
  EXPECT_THAT(file, Not(HasSubstr("train-4.train")));
}

TEST(PodHostsTest, OtherNamespacesNamesAreQualifiedAndComeAfterThePodsOwn) {
  const PodHostEntry ours = Rank("ml", 0, "127.42.16.1");
  const PodHostEntry theirs = Rank("dev", 0, "127.42.16.9");
  const std::string file = PodHostsFile("", ours, {theirs, ours}, {Ranks("dev"), Ranks("ml")});
  EXPECT_THAT(file, HasSubstr("127.42.16.9\ttrain-0.train.dev.svc.cluster.local\t"
                              "train-0.train.dev.svc\ttrain-0.train.dev\n"));
  EXPECT_LT(file.find("127.42.16.1\ttrain-0.train.ml.svc.cluster.local\t"),
            file.find("127.42.16.9\ttrain-0.train.dev"));
  // The short name is this namespace's only.
  EXPECT_THAT(file, Not(HasSubstr("127.42.16.9\ttrain.dev.svc.cluster.local\ttrain.dev.svc\t"
                                  "train.dev\ttrain\n")));
}

}  // namespace
}  // namespace canhazgpu::simkubelet
