// LoadView against the simulated API server over real HTTP.
#include "clusterview/load.h"

#include <fstream>
#include <sstream>

#include "clusterview/gpu_status.h"
#include "clusterview/testing/status_objects.h"
#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubesim/patch.h"
#include "kubesim/testing/test_api_server.h"
#include "yaml/yaml_json.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const kube::ResourceRef kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};

json NodeGpuStatusCrd() {
  std::ifstream in(std::string(DEPLOY_DIR) + "/crds/nodegpustatuses.yaml");
  std::stringstream text;
  text << in.rdbuf();
  return yaml::ToJson(text.str()).value();
}

class LoadViewTest : public ::testing::Test {
 protected:
  explicit LoadViewTest(kubesim::ApiServerOptions options = {}) : sim_(std::move(options)) {
    client_ =
        kube::Client::Create(sim_.Config(), {.qps = 1000, .burst = 1000, .max_retries = 0}).value();
  }

  void Create(const kube::ResourceRef& ref, const json& object) {
    const std::string ns = object.value("/metadata/namespace"_json_pointer, std::string());
    absl::StatusOr<json> created = client_->CreateObject(ref, ns, object);
    ASSERT_TRUE(created.ok()) << created.status();
    if (object.contains("status")) {
      json with_status = *created;
      with_status["status"] = object["status"];
      absl::StatusOr<json> updated = client_->UpdateStatus(ref, ns, with_status);
      ASSERT_TRUE(updated.ok()) << updated.status();
    }
  }

  // node-a: our driver, 4 GPUs, gpu-3 withheld and held by bob; one claim
  // on gpu-0 for alice's pod.
  void CreateCluster(bool with_crd) {
    Create(kube::kNamespaces, testing::NamespaceObject("ml"));
    Create(kube::kNodes, testing::NodeObject("node-a"));
    dra::DevicePool pool = dra::BuildDevicePool(
        {dra::testing::TestGpu(0), dra::testing::TestGpu(1), dra::testing::TestGpu(2)}, "node-a");
    Create(kube::kResourceSlices, testing::SliceObject(pool));
    Create(kube::kPods, testing::PodObject("ml", "train-0", "node-a", "alice"));
    Create(kube::kResourceClaims,
           testing::ClaimObject("ml", "train-gpu", "node-a", {"gpu-0"}, {"train-0"}));
    Create(kube::kResourceClaimTemplates,
           {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaimTemplate"},
            {"metadata", {{"name", "one-gpu"}, {"namespace", "ml"}}},
            {"spec",
             {{"spec",
               {{"devices",
                 {{"requests",
                   {{{"name", "gpu"},
                     {"exactly", {{"deviceClassName", "gpu.canhazgpu.dev"}}}}}}}}}}}}});
    Create(
        kube::kDeviceClasses,
        {{"apiVersion", "resource.k8s.io/v1"},
         {"kind", "DeviceClass"},
         {"metadata", {{"name", "gpu.canhazgpu.dev"}}},
         {"spec",
          {{"selectors", {{{"cel", {{"expression", "device.driver == 'gpu.canhazgpu.dev'"}}}}}}}}});
    if (with_crd) {
      Create(kCrds, NodeGpuStatusCrd());
      Create(kube::kNodeGpuStatuses,
             testing::NodeGpuStatusObject(
                 "node-a", {{{"name", "gpu-3"},
                             {"type", "gpu"},
                             {"state", "Held"},
                             {"held", {{"user", "bob"}, {"since", "2026-11-24T09:00:00Z"}}}}})
                 .ToJson());
    }
  }

  kubesim::TestApiServer sim_;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(LoadViewTest, ReadsEveryKindIntoTheView) {
  CreateCluster(/*with_crd=*/true);
  absl::StatusOr<View> view = LoadView(*client_);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_THAT(view->nodes, ElementsAre(::testing::Key("node-a")));
  EXPECT_THAT(view->pods, ElementsAre(::testing::Key("ml/train-0")));
  EXPECT_THAT(view->claims, ElementsAre(::testing::Key("ml/train-gpu")));
  EXPECT_THAT(view->templates, ElementsAre(::testing::Key("ml/one-gpu")));
  EXPECT_THAT(view->classes, ElementsAre(::testing::Key("gpu.canhazgpu.dev")));
  EXPECT_THAT(view->node_gpu_statuses, ElementsAre(::testing::Key("node-a")));
  EXPECT_THAT(view->pools.problems, IsEmpty());
  ASSERT_EQ(view->pools.pools.size(), 1u);
  EXPECT_EQ(view->pools.pools[0].pool.devices.size(), 3u);
  EXPECT_EQ(view->claims["ml/train-gpu"]["status"]["reservedFor"][0]["name"], "train-0");

  // And the status reads it whole: the claim, the withheld held GPU.
  absl::StatusOr<GpuStatusReport> report = GpuStatus(*view, FromEpochMillis(1'795'514'400'000));
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->rows.size(), 4u);
  EXPECT_EQ(report->rows[0].state, GpuState::kClaimed);
  EXPECT_EQ(report->rows[0].claims[0].user, "alice");
  EXPECT_EQ(report->rows[3].device, "gpu-3");
  EXPECT_EQ(report->rows[3].state, GpuState::kHeld);
}

TEST_F(LoadViewTest, WithoutTheCrdThereAreNoNodeGpuStatuses) {
  CreateCluster(/*with_crd=*/false);
  absl::StatusOr<View> view = LoadView(*client_);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_THAT(view->node_gpu_statuses, IsEmpty());
  EXPECT_EQ(view->claims.size(), 1u);
}

class LoadViewDeniedTest : public LoadViewTest {
 protected:
  LoadViewDeniedTest() : LoadViewTest({.deny = {"list:resourceclaims"}}) {}
};

TEST_F(LoadViewDeniedTest, AnErrorNamesWhatCouldNotBeListed) {
  absl::StatusOr<View> view = LoadView(*client_);
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(view.status().message(), HasSubstr("cannot list resourceclaims.resource.k8s.io"));
  EXPECT_THAT(std::string(view.status().message()), ::testing::Not(HasSubstr("\n")));
}

TEST(LoadViewUnreachableTest, AnUnreachableServerNamesTheListToo) {
  kube::RestConfig config;
  config.server = "http://127.0.0.1:1";  // nothing listens there
  auto client = kube::Client::Create(config, {.max_retries = 0}).value();
  absl::StatusOr<View> view = LoadView(*client);
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(std::string(view.status().message()), ::testing::StartsWith("cannot list nodes: "));
  EXPECT_THAT(view.status().message(), ::testing::Not(HasSubstr("cannot list nodes: cannot")));
}

TEST_F(LoadViewTest, ASlowServerGivesATimeoutNamingTheList) {
  sim_.server().faults().Add(
      {.verb = "list", .resource = "pods", .stall = std::chrono::milliseconds(1000)});
  auto client = kube::Client::Create(sim_.Config(),
                                     {.timeout = std::chrono::milliseconds(200), .max_retries = 0})
                    .value();
  absl::StatusOr<View> view = LoadView(*client);
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(view.status().message()), ::testing::StartsWith("cannot list pods: "));
}

}  // namespace
}  // namespace canhazgpu::clusterview
