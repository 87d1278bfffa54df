// The publisher against the simulated API server over real HTTP: what it
// writes must be accepted, and it must write only when something changed.
#include "driver/slice_publisher.h"

#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubesim/testing/test_api_server.h"

namespace canhazgpu::driver {
namespace {

using dra::testing::TestGpu;
using dra::testing::TestMigGpu;
using nlohmann::json;
using ::testing::ElementsAre;

class SlicePublisherTest : public ::testing::Test {
 protected:
  SlicePublisherTest()
      : client_(kube::Client::Create(sim_.Config(), {.qps = 1000, .burst = 1000}).value()),
        publisher_(*client_) {}

  NodeDevices Node(int gpus, const std::string& name = "node-a") {
    std::vector<GpuInfo> list;
    for (int i = 0; i < gpus; ++i) list.push_back(TestGpu(i));
    return {.pool = dra::BuildDevicePool(list, name)};
  }
  json Slices(const std::string& node = "node-a") {
    return client_->ListAll(kube::kResourceSlices, "", {.field_selector = "spec.nodeName=" + node})
        .value()["items"];
  }
  std::vector<std::string> Published(const std::string& node = "node-a") {
    std::vector<std::string> names;
    for (const json& s : Slices(node)) {
      for (const json& d : s["spec"].value("devices", json::array())) names.push_back(d["name"]);
    }
    return names;
  }

  kubesim::TestApiServer sim_;
  std::unique_ptr<kube::Client> client_;
  SlicePublisher publisher_;
};

TEST_F(SlicePublisherTest, PublishesOnceAndWritesNothingWhenNothingChanged) {
  absl::StatusOr<PublishResult> first = publisher_.Publish(Node(8));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->changed);
  EXPECT_EQ(first->generation, 1);
  json slices = Slices();
  ASSERT_EQ(slices.size(), 1u);
  const std::string version = slices[0]["metadata"]["resourceVersion"];

  absl::StatusOr<PublishResult> again = publisher_.Publish(Node(8));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->changed);
  EXPECT_EQ(again->generation, 1);
  EXPECT_EQ(Slices()[0]["metadata"]["resourceVersion"], version);
}

TEST_F(SlicePublisherTest, AWithheldDeviceLeavesAndComesBackWithANewGeneration) {
  ASSERT_TRUE(publisher_.Publish(Node(4)).ok());
  NodeDevices held = Node(4);
  held.withheld = {"gpu-2"};
  absl::StatusOr<PublishResult> withdrawn = publisher_.Publish(held);
  ASSERT_TRUE(withdrawn.ok()) << withdrawn.status();
  EXPECT_EQ(withdrawn->generation, 2);
  EXPECT_THAT(Published(), ElementsAre("gpu-0", "gpu-1", "gpu-3"));
  EXPECT_EQ(Slices()[0]["spec"]["pool"]["generation"], 2);

  ASSERT_TRUE(publisher_.Publish(Node(4)).ok());
  EXPECT_THAT(Published(), ElementsAre("gpu-0", "gpu-1", "gpu-2", "gpu-3"));
  EXPECT_EQ(Slices()[0]["spec"]["pool"]["generation"], 3);
}

TEST_F(SlicePublisherTest, SlicesGrowShrinkAndStaleOnesGo) {
  ASSERT_TRUE(publisher_.Publish(Node(200)).ok());
  ASSERT_EQ(Slices().size(), 2u);
  // A slice of this node and driver from someone else's naming (an older
  // version, the upstream helper's generateName) is stale.
  json stale = Slices()[1];
  stale["metadata"] = {{"name", "node-a-gpu.canhazgpu.dev-x9z"}};
  ASSERT_TRUE(client_->CreateObject(kube::kResourceSlices, "", stale).ok());
  // Another node's slices are not ours to touch.
  SlicePublisher other(*client_);
  ASSERT_TRUE(other.Publish(Node(2, "node-b")).ok());

  absl::StatusOr<PublishResult> shrunk = publisher_.Publish(Node(3));
  ASSERT_TRUE(shrunk.ok()) << shrunk.status();
  json slices = Slices();
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]["metadata"]["name"], "node-a-gpu.canhazgpu.dev-0");
  EXPECT_EQ(slices[0]["spec"]["pool"]["resourceSliceCount"], 1);
  EXPECT_THAT(Published(), ElementsAre("gpu-0", "gpu-1", "gpu-2"));
  EXPECT_THAT(Published("node-b"), ElementsAre("gpu-0", "gpu-1"));
}

TEST_F(SlicePublisherTest, MigPoolsAndTaintsAreAcceptedByTheServer) {
  NodeDevices node = {.pool = dra::BuildDevicePool({TestMigGpu(0), TestGpu(1)}, "node-a")};
  node.taints["gpu-1"] = {{.key = "gpu.canhazgpu.dev/xid",
                           .value = "79",
                           .effect = "NoExecute",
                           .time_added = "2026-11-24T01:00:00Z"}};
  absl::StatusOr<PublishResult> published = publisher_.Publish(node);
  ASSERT_TRUE(published.ok()) << published.status();
  EXPECT_EQ(Slices().size(), 2u);
  EXPECT_FALSE(publisher_.Publish(node)->changed);
  node.taints.clear();
  EXPECT_TRUE(publisher_.Publish(node)->changed);
}

TEST_F(SlicePublisherTest, ARepeatCostsNoRequestUnlessVerified) {
  ASSERT_TRUE(publisher_.Publish(Node(4)).ok());
  // Any request now fails: a repeat that makes none still succeeds.
  sim_.server().faults().Add({.count = 100, .code = 500});
  absl::StatusOr<PublishResult> repeat = publisher_.Publish(Node(4), /*verify=*/false);
  ASSERT_TRUE(repeat.ok()) << repeat.status();
  EXPECT_FALSE(repeat->changed);
  EXPECT_EQ(repeat->generation, 1);
  EXPECT_EQ(sim_.server().faults().Pending()[0].count, 100);
  EXPECT_FALSE(publisher_.Publish(Node(4), /*verify=*/true).ok());  // it reads
  NodeDevices changed = Node(4);
  changed.withheld = {"gpu-0"};
  EXPECT_FALSE(publisher_.Publish(changed, /*verify=*/false).ok());  // it must write
  sim_.server().faults().Clear();
  // After a failure nothing is assumed: the next call reads and repairs.
  ASSERT_TRUE(publisher_.Publish(changed, /*verify=*/false).ok());
  EXPECT_THAT(Published(), ElementsAre("gpu-1", "gpu-2", "gpu-3"));
  // Someone deleted the slices: the periodic verify puts them back.
  ASSERT_TRUE(client_->DeleteCollection(kube::kResourceSlices, "", {}).ok());
  EXPECT_FALSE(publisher_.Publish(changed, /*verify=*/false)->changed);
  EXPECT_TRUE(publisher_.Publish(changed, /*verify=*/true)->changed);
  EXPECT_THAT(Published(), ElementsAre("gpu-1", "gpu-2", "gpu-3"));
}

TEST_F(SlicePublisherTest, AChangeAfterItsOwnWriteNeedsNoListUnlessSomeoneElseWrote) {
  ASSERT_TRUE(publisher_.Publish(Node(4)).ok());
  sim_.server().faults().Add(
      {.verb = "list", .resource = "resourceslices", .count = 100, .code = 500});
  NodeDevices changed = Node(4);
  changed.withheld = {"gpu-0"};
  absl::StatusOr<PublishResult> written = publisher_.Publish(changed, /*verify=*/false);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->generation, 2);
  EXPECT_EQ(sim_.server().faults().Pending()[0].count, 100);  // not one list
  sim_.server().faults().Clear();
  EXPECT_THAT(Published(), ElementsAre("gpu-1", "gpu-2", "gpu-3"));

  // Someone else writes the slice: the next change meets a conflict, reads,
  // and still lands.
  json slice = Slices()[0];
  slice["metadata"]["labels"]["touched"] = "yes";
  ASSERT_TRUE(client_->Update(kube::kResourceSlices, "", slice).ok());
  absl::StatusOr<PublishResult> again = publisher_.Publish(Node(4), /*verify=*/false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->generation, 3);
  EXPECT_THAT(Published(), ElementsAre("gpu-0", "gpu-1", "gpu-2", "gpu-3"));
}

TEST_F(SlicePublisherTest, AnApiErrorIsReturnedAndTheNextPublishFinishes) {
  sim_.server().faults().Add({.verb = "create", .resource = "resourceslices", .code = 500});
  absl::StatusOr<PublishResult> failed = publisher_.Publish(Node(2));
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), ::testing::HasSubstr("resourceslices"));
  absl::StatusOr<PublishResult> retried = publisher_.Publish(Node(2));
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_THAT(Published(), ElementsAre("gpu-0", "gpu-1"));

  ASSERT_TRUE(publisher_.Unpublish("node-a", "gpu.canhazgpu.dev").ok());
  EXPECT_TRUE(Slices().empty());
}

}  // namespace
}  // namespace canhazgpu::driver
