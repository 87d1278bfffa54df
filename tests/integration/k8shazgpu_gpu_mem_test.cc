// k8shazgpu run --gpu-mem: a share of a GPU's memory asked for as the
// claim's capacity request (KEP-5075), and said plainly what the run got.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/k8shazgpu_run_fixture.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// A node that does not share its GPUs by memory (the driver's default)
// still serves the run, whole, and the run says so rather than let the
// user believe in a share.
TEST_F(K8shazgpuRunTest, GpuMemOnANodeThatDoesNotShareSaysTheGpuIsHeldWhole) {
  StartCluster(1, 1);
  CliResult r = K8s({"run", "--keep", "--name", "small", "--gpu-mem", "10Gi", "--", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("gpu-0 on node-0 is not shared by memory on its node: this run "
                               "holds it whole"));
  // What was asked: 10Gi of the GPU's memory capacity.
  const json claim =
      client_->ListAll(kube::kResourceClaims, "default", {.label_selector = "canhazgpu.dev/user"})
          .value()["items"][0];
  EXPECT_EQ(claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"]["memory"],
            "10Gi");
  // More than any GPU has is refused before anything is created.
  CliResult big = K8s({"run", "--nonblock", "--gpu-mem", "4Ti", "--", "true"});
  EXPECT_NE(big.exit_code, 0);
  EXPECT_THAT(big.err, HasSubstr("memory"));
}

// Our driver with --gpu-sharing=memory: two runs share the GPU, each told
// its share and the isolation its node offers (the simulated node has no
// MPS, so: none, booked and said so); status speaks in shares; a whole-GPU
// run cannot have it now.
TEST_F(K8shazgpuRunTest, OurDriverSharingByMemoryServesTwoRunsAndSaysTheIsolation) {
  StartCluster(1, 1, 0, "canhazgpu", {"--gpu-sharing", "memory"});
  for (const std::string name : {"first", "second"}) {
    CliResult r = K8s({"run", "--detach", "--name", name, "--gpu-mem", "10Gi", "--", "sh", "-c",
                       WaitForGate(name)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("a 10Gi share of gpu-0 on node-0 (memory isolation: none - the "
                                 "share is booked, not enforced)"));
  }
  CliResult status = K8s({"status"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("10Gi"));
  CliResult whole = K8s({"run", "--nonblock", "--", "true"});
  EXPECT_EQ(whole.exit_code, 3) << whole.err;
  for (const std::string name : {"first", "second"}) WriteFile(Gate(name), "");
}

// NVIDIA's driver in its consumable-shares mode (the stand-in): two runs
// share one GPU by memory, a third that does not fit is refused with
// --nonblock, and each run is told the driver publishes no isolation -
// NVIDIA's shares are booked, not limited.
TEST_F(K8shazgpuRunTest, NvidiasConsumableSharesServeTwoRunsOnOneGpu) {
  StartCluster(1, 1, 0, "nvidia", {"--nvidia-consumable-shares"});
  for (const std::string name : {"first", "second"}) {
    CliResult r = K8s({"run", "--detach", "--name", name, "--class", "gpu.nvidia.com", "--gpu-mem",
                       "10Gi", "--", "sh", "-c", WaitForGate(name)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("a 10Gi share of gpu-0 on node-0 (memory isolation: not "
                                 "published by gpu.nvidia.com)"));
  }
  EXPECT_TRUE(
      Eventually([&] { return Phase("first") == "Running" && Phase("second") == "Running"; }));
  CliResult third =
      K8s({"run", "--nonblock", "--class", "gpu.nvidia.com", "--gpu-mem", "70Gi", "--", "true"});
  EXPECT_EQ(third.exit_code, 3) << third.err;
  for (const std::string name : {"first", "second"}) WriteFile(Gate(name), "");
}

}  // namespace
}  // namespace canhazgpu::testing
