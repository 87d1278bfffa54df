// NodeGpuStatus (objects_gpu_status.h) against the JSON the node driver
// writes: every field modeled, read and written back unchanged, and a badly
// typed field refused with its path.
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/objects.h"

namespace canhazgpu::kube {
namespace {

using ::nlohmann::json;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// A NodeGpuStatus as driver::NodeGpuStatusObject writes it, with every kind
// of device and every field the CRD has.
const json& DriverWritten() {
  static const json kWritten = [] {
    json j = json::parse(
        R"({"apiVersion":"canhazgpu.dev/v1alpha1","kind":"NodeGpuStatus","metadata":{"name":"node-a","ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"node-a","uid":"node-uid"}]},"spec":{"nodeName":"node-a"},"status":{"devices":[{"index":0,"name":"gpu-0","productName":"NVIDIA A100-SXM4-40GB","state":"Free","type":"gpu","uuid":"GPU-00000000"},{"held":{"kind":"Manual","since":"2026-11-18T11:06:40Z","until":"2026-11-18T12:06:40Z","user":"alice"},"index":1,"name":"gpu-1","productName":"NVIDIA A100-SXM4-40GB","state":"Held","type":"gpu","uuid":"GPU-00000001"},{"claims":[{"name":"train","namespace":"ml","pods":["train-0"],"uid":"u-1"}],"index":2,"name":"gpu-2","productName":"NVIDIA A100-SXM4-40GB","state":"Prepared","type":"gpu","uuid":"GPU-00000002"},{"index":3,"name":"gpu-3","productName":"NVIDIA A100-SXM4-40GB","state":"InUse","taints":[{"effect":"NoSchedule","key":"gpu.canhazgpu.dev/xid","source":"Driver","value":"79"}],"type":"gpu","usage":{"memoryUsedBytes":0,"processes":[{"command":"python serve.py","memoryBytes":2147483648,"pid":4242,"user":"carol"}],"users":["carol"]},"uuid":"GPU-00000003"}],"driverVersion":"535.104.05","summary":{"free":1,"held":1,"inUse":1,"prepared":1,"tainted":1,"total":4},"updateTime":"2026-11-18T11:08:20Z"}})");
    json& gpu3 = j["status"]["devices"][3];
    gpu3["taints"][0]["reason"] = "fatal XID 79, GPU lost";
    gpu3["usage"]["memoryUsedBytes"] = 2147483648;
    // A GPU shared by memory: a pod's share under its claim, a local one.
    j["status"]["devices"].push_back(json::parse(
        R"({"claims":[{"memory":"10Gi","name":"a","namespace":"ml","pods":["a-0"],"shareID":"s-1","uid":"u-2"}],"index":4,"name":"gpu-4","productName":"NVIDIA A100-SXM4-40GB","sharing":{"freeMemory":"25088Mi","localShares":[{"kind":"Manual","memory":"5Gi","shareID":"s-2","since":"2026-11-18T11:06:40Z","until":"2026-11-18T12:06:40Z","user":"bob"}],"memoryIsolation":"mps","shareableMemory":"40448Mi"},"state":"Shared","type":"gpu","uuid":"GPU-00000004"})"));
    j["status"]["summary"]["shared"] = 1;
    j["status"]["summary"]["total"] = 5;
    // Kept for local waiters: a whole GPU, memory for a share.
    j["status"]["devices"][0]["keptFor"] =
        json::parse(R"([{"since":"2026-11-18T11:07:00Z","user":"dave"}])");
    j["status"]["devices"][4]["keptFor"] = json::parse(R"([{"memory":"20Gi","user":"erin"}])");
    return j;
  }();
  return kWritten;
}

std::set<std::string> KeysOf(const json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

TEST(NodeGpuStatusTest, RoundTripsAndIsModeled) {
  absl::StatusOr<NodeGpuStatus> status = NodeGpuStatus::FromJson(DriverWritten());
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->ToJson(), DriverWritten());
  EXPECT_EQ(status->ToJson().dump(), DriverWritten().dump());

  EXPECT_THAT(KeysOf(status->unknown), IsEmpty());
  EXPECT_THAT(KeysOf(status->spec.unknown), IsEmpty());
  EXPECT_THAT(KeysOf(status->status.unknown), IsEmpty());
  EXPECT_THAT(KeysOf(status->status.summary.unknown), IsEmpty());
  for (const NodeGpuDevice& d : status->status.devices) {
    EXPECT_THAT(KeysOf(d.unknown), IsEmpty()) << d.name;
  }
  const std::vector<NodeGpuDevice>& d = status->status.devices;
  ASSERT_EQ(d.size(), 5u);
  ASSERT_TRUE(d[4].sharing.has_value());
  EXPECT_THAT(KeysOf(d[4].sharing->unknown), IsEmpty());
  EXPECT_THAT(KeysOf(d[4].sharing->local_shares.at(0).unknown), IsEmpty());
  ASSERT_EQ(d[0].kept_for.size(), 1u);
  EXPECT_EQ(d[0].kept_for[0].user, "dave");
  EXPECT_THAT(KeysOf(d[0].kept_for[0].unknown), IsEmpty());
  EXPECT_EQ(d[4].kept_for.at(0).memory, "20Gi");
  EXPECT_THAT(KeysOf(d[4].claims.at(0).unknown), IsEmpty());
  EXPECT_EQ(d[4].claims[0].share_id, "s-1");
  EXPECT_EQ(d[4].sharing->local_shares[0].user, "bob");
  EXPECT_EQ(status->status.summary.shared, 1);
  EXPECT_THAT(KeysOf(d[1].held->unknown), IsEmpty());
  EXPECT_THAT(KeysOf(d[2].claims.at(0).unknown), IsEmpty());
  EXPECT_THAT(KeysOf(d[3].usage->unknown), IsEmpty());
  EXPECT_THAT(KeysOf(d[3].usage->processes.at(0).unknown), IsEmpty());
  EXPECT_THAT(KeysOf(d[3].taints.at(0).unknown), IsEmpty());

  EXPECT_EQ(status->NodeName(), "node-a");
  EXPECT_EQ(status->status.update_time, "2026-11-18T11:08:20Z");
  EXPECT_EQ(status->status.driver_version, "535.104.05");
  EXPECT_EQ(status->status.summary.in_use, 1);
  EXPECT_EQ(d[0].index, 0);
  EXPECT_EQ(d[0].product_name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(d[1].held->until, "2026-11-18T12:06:40Z");
  EXPECT_EQ(d[2].claims[0].pods, std::vector<std::string>{"train-0"});
  EXPECT_EQ(d[3].usage->processes[0].pid, 4242);
  EXPECT_EQ(d[3].usage->processes[0].memory_bytes, 2147483648);
  EXPECT_EQ(d[3].taints[0].reason, "fatal XID 79, GPU lost");
  EXPECT_EQ(status->status.Find("gpu-2"), &d[2]);
  EXPECT_EQ(status->status.Find("gpu-9"), nullptr);
}

TEST(NodeGpuStatusTest, ZerosAndEmptyStringsTheWriterSetsAreWritten) {
  NodeGpuStatus status;
  status.metadata.name = "node-b";
  status.status.summary.total = 0;
  NodeGpuDevice device;
  device.name = "gpu-0";
  device.usage.emplace();
  device.usage->memory_used_bytes = 0;
  NodeGpuProcess process;
  process.pid = 7;
  process.user = "";
  process.command = "";
  device.usage->processes.push_back(process);
  device.claims.push_back({});
  device.claims[0].uid = "";
  status.status.devices.push_back(device);
  EXPECT_EQ(status.ToJson(), json::parse(R"({
    "apiVersion": "canhazgpu.dev/v1alpha1", "kind": "NodeGpuStatus",
    "metadata": {"name": "node-b"},
    "status": {"summary": {"total": 0}, "devices": [{"name": "gpu-0",
      "claims": [{"uid": ""}],
      "usage": {"memoryUsedBytes": 0, "processes": [{"pid": 7, "user": "", "command": ""}]}}]}})"));
  EXPECT_EQ(status.NodeName(), "node-b");  // no spec.nodeName
}

TEST(NodeGpuStatusTest, AnEmptyUsageOrDeviceListIsKeptAsRead) {
  json in = DriverWritten();
  in["status"]["devices"][0]["usage"] = json::object();
  absl::StatusOr<NodeGpuStatus> status = NodeGpuStatus::FromJson(in);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->status.devices[0].usage.has_value());  // present, if empty
  EXPECT_FALSE(status->status.devices[1].usage.has_value());
  EXPECT_EQ(status->ToJson(), in);

  in["status"]["devices"] = json::array();
  status = NodeGpuStatus::FromJson(in);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_THAT(status->status.devices, IsEmpty());
  EXPECT_EQ(status->ToJson(), in);
}

// The error FromJson gives for DriverWritten() with `pointer` set to `value`.
std::string StatusErrorFor(const std::string& pointer, const json& value) {
  json in = DriverWritten();
  in[json::json_pointer(pointer)] = value;
  absl::StatusOr<NodeGpuStatus> status = NodeGpuStatus::FromJson(in);
  EXPECT_FALSE(status.ok()) << pointer;
  EXPECT_EQ(status.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(status.status().message());
}

TEST(NodeGpuStatusTest, TypeErrorsNameTheField) {
  EXPECT_EQ(StatusErrorFor("/status/devices/1/index", "1"),
            "status.devices[1].index: expected an integer, got string");
  EXPECT_EQ(StatusErrorFor("/status/devices/1/held", json::array()),
            "status.devices[1].held: expected an object, got array");
  EXPECT_EQ(StatusErrorFor("/status/devices/3/usage/users/0", 5),
            "status.devices[3].usage.users[0]: expected a string, got number");
  EXPECT_EQ(StatusErrorFor("/status/devices/2/claims", json::object()),
            "status.devices[2].claims: expected a list, got object");
  EXPECT_EQ(StatusErrorFor("/status/summary/free", 1.5),
            "status.summary.free: expected an integer, got number");
  EXPECT_EQ(StatusErrorFor("/spec/nodeName", true),
            "spec.nodeName: expected a string, got boolean");
  EXPECT_EQ(StatusErrorFor("/status/devices", "gpu-0"),
            "status.devices: expected a list, got string");
  for (const json& in : {json(nullptr), json::array(), json("node-a"), json(3)}) {
    absl::StatusOr<NodeGpuStatus> status = NodeGpuStatus::FromJson(in);
    ASSERT_FALSE(status.ok()) << in;
    EXPECT_THAT(std::string(status.status().message()), StartsWith("expected an object, got "));
  }
}

}  // namespace
}  // namespace canhazgpu::kube
