// The DRAPlugin services (v1 and v1beta1) end to end: KubeletClient ->
// unix socket -> PluginServer -> FakeNodeService, and raw calls by the full
// method paths of reference/dra.md.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubelet/dra_health_v1.pb.h"
#include "kubelet/dra_health_v1alpha1.pb.h"
#include "kubelet/dra_v1.pb.h"
#include "kubelet/dra_v1beta1.pb.h"
#include "kubelet/pluginregistration.pb.h"
#include "kubeletplugin/kubelet_client.h"
#include "kubeletplugin/plugin_server.h"
#include "kubeletplugin/testing/plugin_harness.h"

namespace canhazgpu::kubeletplugin {
namespace {

using ::testing::ElementsAre;
using testing::FakeNodeService;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::PluginHarness;
using testing::RawUnaryCall;

constexpr std::chrono::seconds kWait{10};  // bound on waiting for a condition

driver::ClaimRef Claim(const std::string& name) { return {"default", "uid-" + name, name}; }

// A plugin advertising only the version under test, and a kubelet
// registered with it.
class DraPluginServiceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    PluginServerOptions options = harness_.Options();
    options.supported_versions = {GetParam()};
    auto server = harness_.Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    Connect(KubeletClientOptions());
  }

  // A failed assertion may leave the driver held, and the server's shutdown
  // would wait for it.
  void TearDown() override { node_.Release(); }

  void Connect(KubeletClientOptions options) {
    auto client = KubeletClient::Register(server_->registration_socket(), options);
    ASSERT_TRUE(client.ok()) << client.status();
    ASSERT_EQ((*client)->service(), GetParam());
    kubelet_ = std::move(*client);
  }

  bool IsV1() const { return GetParam() == "v1.DRAPlugin"; }

  PluginHarness harness_;
  FakeNodeService& node_ = harness_.node;
  std::unique_ptr<PluginServer> server_;
  std::unique_ptr<KubeletClient> kubelet_;
};

INSTANTIATE_TEST_SUITE_P(Versions, DraPluginServiceTest,
                         ::testing::Values("v1.DRAPlugin", "v1beta1.DRAPlugin"),
                         [](const auto& info) {
                           return info.param.substr(0, info.param.find('.'));
                         });

TEST_P(DraPluginServiceTest, PreparesEveryClaimWithPerClaimErrorsVerbatim) {
  node_.SetPrepareResult("uid-b", {.error = "gpu-7: held by claim other/x (uid-9)"});
  auto results = kubelet_->NodePrepareResources({Claim("a"), Claim("b")});
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 2u);

  const driver::PrepareResult& a = results->at("uid-a");
  EXPECT_EQ(a.error, "");
  ASSERT_EQ(a.devices.size(), 1u);
  EXPECT_EQ(a.devices[0].pool, "node-a");
  EXPECT_EQ(a.devices[0].device, "gpu-a");
  EXPECT_THAT(a.devices[0].cdi_device_ids, ElementsAre("canhazgpu.dev/gpu=a"));
  EXPECT_EQ(results->at("uid-b").error, "gpu-7: held by claim other/x (uid-9)");

  std::vector<driver::ClaimRef> seen = node_.prepared_claims();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].namespace_name, "default");
  EXPECT_EQ(seen[0].uid, "uid-a");
  EXPECT_EQ(seen[0].name, "a");
}

TEST_P(DraPluginServiceTest, CarriesEveryDeviceFieldAndShareIdOnlyInV1) {
  node_.SetPrepareResult(
      "uid-a", {.devices = {{.request_names = {"gpu", "mem"},
                             .pool = "node-a",
                             .device = "gpu-3",
                             .cdi_device_ids = {"canhazgpu.dev/gpu=3", "canhazgpu.dev/mps=3"},
                             .share_id = "share-1"},
                            {.pool = "node-a", .device = "gpu-4"}}});
  auto results = kubelet_->NodePrepareResources({Claim("a")});
  ASSERT_TRUE(results.ok()) << results.status();
  const std::vector<driver::PreparedDevice>& devices = results->at("uid-a").devices;
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_THAT(devices[0].request_names, ElementsAre("gpu", "mem"));
  EXPECT_EQ(devices[0].device, "gpu-3");
  EXPECT_THAT(devices[0].cdi_device_ids, ElementsAre("canhazgpu.dev/gpu=3", "canhazgpu.dev/mps=3"));
  if (IsV1()) {
    EXPECT_EQ(devices[0].share_id, "share-1");
  } else {
    EXPECT_EQ(devices[0].share_id, std::nullopt);
  }
  // Unset stays unset (proto3 optional), rather than becoming "".
  EXPECT_EQ(devices[1].share_id, std::nullopt);
  EXPECT_THAT(devices[1].request_names, IsEmpty());
}

TEST_P(DraPluginServiceTest, ClaimsMissingFieldsGetPerClaimErrors) {
  auto results =
      kubelet_->NodePrepareResources({{"default", "", "no-uid"}, {"", "uid-x", ""}, Claim("ok")});
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 3u);
  EXPECT_THAT(results->at("").error, HasSubstr("default/no-uid"));
  EXPECT_THAT(results->at("").error, HasSubstr("missing uid"));
  EXPECT_THAT(results->at("uid-x").error, HasSubstr("missing namespace, name"));
  EXPECT_EQ(results->at("uid-ok").error, "");
  // Only the complete claim reached the driver.
  std::vector<driver::ClaimRef> seen = node_.prepared_claims();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].uid, "uid-ok");

  auto errors = kubelet_->NodeUnprepareResources({{"default", "", "no-uid"}, Claim("ok")});
  ASSERT_TRUE(errors.ok()) << errors.status();
  EXPECT_THAT(errors->at(""), HasSubstr("missing uid"));
  EXPECT_EQ(errors->at("uid-ok"), "");
  EXPECT_EQ(node_.unprepared_claims().size(), 1u);
}

TEST_P(DraPluginServiceTest, DuplicateUidsAreHandledOnce) {
  auto results = kubelet_->NodePrepareResources({Claim("a"), Claim("a"), Claim("b")});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(results->size(), 2u);
  EXPECT_EQ(node_.prepared_claims().size(), 2u);

  auto errors = kubelet_->NodeUnprepareResources({Claim("a"), Claim("a")});
  ASSERT_TRUE(errors.ok()) << errors.status();
  EXPECT_EQ(errors->size(), 1u);
  EXPECT_EQ(node_.unprepared_claims().size(), 1u);
}

TEST_P(DraPluginServiceTest, AClaimTheDriverLeftOutGetsAnError) {
  node_.ForgetInAnswer("uid-b");
  auto results = kubelet_->NodePrepareResources({Claim("a"), Claim("b")});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(results->at("uid-a").error, "");
  EXPECT_THAT(results->at("uid-b").error, HasSubstr("driver returned no result"));
}

TEST_P(DraPluginServiceTest, UnpreparesEveryClaimWithErrorsVerbatim) {
  node_.SetUnprepareError("uid-b", "cdi spec for uid-b: permission denied");
  auto errors = kubelet_->NodeUnprepareResources({Claim("a"), Claim("b")});
  ASSERT_TRUE(errors.ok()) << errors.status();
  ASSERT_EQ(errors->size(), 2u);
  EXPECT_EQ(errors->at("uid-a"), "");
  EXPECT_EQ(errors->at("uid-b"), "cdi spec for uid-b: permission denied");
}

TEST_P(DraPluginServiceTest, AnEmptyRequestGetsAnEmptyAnswer) {
  auto results = kubelet_->NodePrepareResources({});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_THAT(*results, IsEmpty());
  EXPECT_THAT(node_.prepared_claims(), IsEmpty());
}

TEST_P(DraPluginServiceTest, PrepareOverTheDeadlineFailsAndTheServerCarriesOn) {
  KubeletClientOptions impatient;
  impatient.call_timeout = std::chrono::milliseconds(100);
  Connect(impatient);
  node_.Hold();
  auto late = kubelet_->NodePrepareResources({Claim("slow")});
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(late.status().message(), HasSubstr("NodePrepareResources on "));

  // The held call is still inside the driver; let it finish, then the next
  // call is served normally.
  ASSERT_TRUE(node_.WaitForPreparesStarted(1, kWait));
  // Issue 29 item 14: the driver can tell that nobody waits for the answer.
  EXPECT_TRUE(node_.WaitForCancelled(kWait));
  node_.Release();
  ASSERT_TRUE(node_.WaitForPreparesFinished(1, kWait));
  Connect(KubeletClientOptions());
  auto next = kubelet_->NodePrepareResources({Claim("next")});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->at("uid-next").error, "");
}

// Issue 29 item 5: the driver works to the kubelet's deadline, and to no
// more than the kubelet's own 45 s when a caller allows longer.
TEST_P(DraPluginServiceTest, TheDriverGetsTheCallsDeadlineAtMost45SecondsAway) {
  using std::chrono::seconds;
  using std::chrono::steady_clock;
  KubeletClientOptions options;
  options.call_timeout = seconds(20);
  Connect(options);
  auto before = steady_clock::now();
  ASSERT_TRUE(kubelet_->NodePrepareResources({Claim("a")}).ok());
  EXPECT_GT(node_.last_deadline(), before + seconds(15));
  // Give or take the time the call took to arrive.
  EXPECT_LE(node_.last_deadline(), steady_clock::now() + seconds(21));

  options.call_timeout = std::chrono::minutes(10);
  Connect(options);
  before = steady_clock::now();
  ASSERT_TRUE(kubelet_->NodePrepareResources({Claim("b")}).ok());
  EXPECT_GT(node_.last_deadline(), before + seconds(40));
  EXPECT_LE(node_.last_deadline(), steady_clock::now() + seconds(45));  // the cap: exact
}

TEST_P(DraPluginServiceTest, ServesConcurrentPrepares) {
  constexpr int kThreads = 4;
  // Held until all calls are inside the driver at once: the server does
  // not serialize them.
  node_.Hold();
  std::vector<absl::StatusOr<std::map<std::string, driver::PrepareResult>>> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back(
        [&, i] { results[i] = kubelet_->NodePrepareResources({Claim("c" + std::to_string(i))}); });
  }
  bool all_inside = node_.WaitForPreparesStarted(kThreads, kWait);
  node_.Release();
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_TRUE(all_inside);
  for (int i = 0; i < kThreads; ++i) {
    std::string name = "c" + std::to_string(i);
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    ASSERT_EQ(results[i]->size(), 1u);
    ASSERT_EQ(results[i]->at("uid-" + name).devices.size(), 1u);
    EXPECT_EQ(results[i]->at("uid-" + name).devices[0].device, "gpu-" + name);
  }
}

TEST_P(DraPluginServiceTest, ManyThreadsPreparingAndUnpreparingDifferentClaims) {
  constexpr int kThreads = 6;
  constexpr int kCallsEach = 20;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsEach; ++i) {
        driver::ClaimRef claim = Claim(std::to_string(t) + "-" + std::to_string(i));
        auto prepared = kubelet_->NodePrepareResources({claim});
        auto unprepared = kubelet_->NodeUnprepareResources({claim});
        if (!prepared.ok() || prepared->at(claim.uid).devices.at(0).device != "gpu-" + claim.name ||
            !unprepared.ok() || unprepared->at(claim.uid) != "") {
          ++failures[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_THAT(failures, ::testing::Each(0));
  EXPECT_EQ(node_.prepared_claims().size(), size_t{kThreads * kCallsEach});
  EXPECT_EQ(node_.unprepared_claims().size(), size_t{kThreads * kCallsEach});
}

// The exact paths the kubelet calls (reference/dra.md section 1), typed out
// rather than taken from generated code, so that a wrong package or method
// name in our .proto files fails here.
constexpr char kV1Prepare[] = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources";
constexpr char kV1Unprepare[] = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources";
constexpr char kV1beta1Prepare[] =
    "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources";
constexpr char kV1beta1Unprepare[] =
    "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources";
constexpr char kGetInfo[] = "/pluginregistration.Registration/GetInfo";
constexpr char kNotify[] = "/pluginregistration.Registration/NotifyRegistrationStatus";
constexpr char kWatchV1alpha1[] = "/v1alpha1.DRAResourceHealth/NodeWatchResources";
constexpr char kWatchV1[] = "/v1.DRAResourceHealth/NodeWatchResources";

class MethodPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = harness_.Start(harness_.Options());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  PluginHarness harness_;
  std::unique_ptr<PluginServer> server_;
};

template <typename Request, typename Response>
void ExpectPrepareServedAt(const std::string& socket, const std::string& method) {
  Request request;
  auto* claim = request.add_claims();
  claim->set_namespace_("default");
  claim->set_uid("uid-raw");
  claim->set_name("raw");
  std::string bytes;
  grpc::Status status = RawUnaryCall(socket, method, request.SerializeAsString(), &bytes);
  ASSERT_TRUE(status.ok()) << method << ": " << status.error_message();
  Response response;
  ASSERT_TRUE(response.ParseFromString(bytes));
  ASSERT_EQ(response.claims().count("uid-raw"), 1u) << method;
  EXPECT_EQ(response.claims().at("uid-raw").error(), "") << method;
}

TEST_F(MethodPathTest, DraPluginMethodsAreServedAtTheKubeletsPaths) {
  namespace v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
  namespace v1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
  const std::string& dra = server_->dra_socket();
  ExpectPrepareServedAt<v1::NodePrepareResourcesRequest, v1::NodePrepareResourcesResponse>(
      dra, kV1Prepare);
  ExpectPrepareServedAt<v1::NodeUnprepareResourcesRequest, v1::NodeUnprepareResourcesResponse>(
      dra, kV1Unprepare);
  ExpectPrepareServedAt<v1beta1::NodePrepareResourcesRequest,
                        v1beta1::NodePrepareResourcesResponse>(dra, kV1beta1Prepare);
  ExpectPrepareServedAt<v1beta1::NodeUnprepareResourcesRequest,
                        v1beta1::NodeUnprepareResourcesResponse>(dra, kV1beta1Unprepare);
}

TEST_F(MethodPathTest, RegistrationMethodsAreServedAtTheKubeletsPaths) {
  std::string bytes;
  grpc::Status status = RawUnaryCall(server_->registration_socket(), kGetInfo, "", &bytes);
  ASSERT_TRUE(status.ok()) << status.error_message();
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(info.ParseFromString(bytes));
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.endpoint(), server_->dra_socket());

  pluginregistration::RegistrationStatus notify;
  notify.set_plugin_registered(true);
  status =
      RawUnaryCall(server_->registration_socket(), kNotify, notify.SerializeAsString(), &bytes);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(server_->registration_status().has_value());
  EXPECT_TRUE(server_->registration_status()->registered);
}

TEST_F(MethodPathTest, UnknownPathIsUnimplemented) {
  // The check the tests above rely on: a misspelt path is not served.
  std::string bytes;
  grpc::Status status =
      RawUnaryCall(server_->dra_socket(),
                   "/k8s.io.kubelet.pkg.apis.dra.v1.DraPlugin/NodePrepareResources", "", &bytes);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

// The health stream is server-streaming, so instead of a raw call its path
// is checked against the descriptor that the generated client and server
// both build their path from.
template <typename Request>
std::string WatchPath() {
  const auto* service = Request::descriptor()->file()->FindServiceByName("DRAResourceHealth");
  return "/" + service->full_name() + "/" + service->FindMethodByName("NodeWatchResources")->name();
}

TEST(HealthMethodPathTest, WatchPathsAreTheKubelets) {
  EXPECT_EQ(WatchPath<::v1alpha1::NodeWatchResourcesRequest>(), kWatchV1alpha1);
  EXPECT_EQ(WatchPath<::v1::NodeWatchResourcesRequest>(), kWatchV1);
}

}  // namespace
}  // namespace canhazgpu::kubeletplugin
