// The preparer on a node that shares its GPUs by memory (ADR 0018): shares
// prepared one by one beside each other and local shares, their CDI
// environment per request, and their MPS daemons through the stand-in
// nvidia-cuda-mps-control (tests/fake_mps).
#include <filesystem>
#include <fstream>

#include "core/strings.h"
#include "dra/test_pools.h"
#include "driver/cdi_spec.h"
#include "driver/claim_preparer.h"
#include "driver/shared_gpus.h"
#include "driver/testing/allocated_claim.h"
#include "driver/testing/cdi_schema.h"
#include "driver/testing/claim_preparer_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/linux_process_table.h"
#include "mps/mps_daemons.h"
#include "store/claim_reservations.h"

namespace canhazgpu::driver {
namespace {

using dra::testing::TestGpu;
using nlohmann::json;
using testing::ClaimPreparerTest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

// A node that shares its GPUs by memory (--gpu-sharing=memory): 40 GiB GPUs,
// 39.5 GiB of each to share.
class SharedGpuPreparerTest : public ClaimPreparerTest {
 protected:
  void SetUp() override {
    ClaimPreparerTest::SetUp();
    std::vector<GpuInfo> gpus;
    for (int i = 0; i < 4; ++i) gpus.push_back(TestGpu(i));
    const SharingOptions sharing{.enabled = true, .driver_root = dir_ + "/driver-root"};
    node_ = NodeDevices{.pool = dra::BuildDevicePool(gpus, "node-a", PoolOptionsFor(sharing))};
    ApplySharing(node_, gpus, {}, sharing);
  }
  ClaimRef Share(const std::string& name, const std::string& device, const std::string& share_id,
                 const std::string& memory) {
    return testing::CreateAllocatedShareClaim(*client_, "ml", name, {{device, share_id, memory}},
                                              "node-a", name + "-pod")
        .value();
  }
  json Spec(const std::string& uid) {
    std::ifstream in(SpecFile(uid));
    return json::parse(in);
  }
};

constexpr char kShareA[] = "0a0e8a51-7c33-4a43-a0b4-2f1f7e0c6f10";
constexpr char kShareB[] = "0b0e8a51-7c33-4a43-a0b4-2f1f7e0c6f10";
constexpr char kShareC[] = "0c0e8a51-7c33-4a43-a0b4-2f1f7e0c6f10";
constexpr char kShareD[] = "0d0e8a51-7c33-4a43-a0b4-2f1f7e0c6f10";

TEST_F(SharedGpuPreparerTest, TwoSharesOfOneGpuEachWithItsOwnSpecAndReservation) {
  const ClaimRef a = Share("a", "gpu-0", kShareA, "10Gi");
  const ClaimRef b = Share("b", "gpu-0", kShareB, "10Gi");
  PrepareResult ra = preparer_->PrepareClaims({a}, {})[a.uid];
  PrepareResult rb = preparer_->PrepareClaims({b}, {})[b.uid];
  ASSERT_EQ(ra.error, "");
  ASSERT_EQ(rb.error, "");
  ASSERT_EQ(ra.devices.size(), 1u);
  EXPECT_EQ(ra.devices[0].device, "gpu-0");
  EXPECT_EQ(ra.devices[0].share_id, kShareA);
  EXPECT_EQ(rb.devices[0].share_id, kShareB);
  EXPECT_EQ(ra.devices[0].cdi_device_ids[0],
            StrCat("k8s.gpu.canhazgpu.dev/claim=", a.uid, "-gpu-0-share-", kShareA));

  std::vector<Reservation> held = Reservations();
  ASSERT_EQ(held.size(), 2u);
  for (const Reservation& r : held) {
    EXPECT_EQ(r.gpu, 0);
    EXPECT_EQ(r.memory, uint64_t{10} << 30);
    EXPECT_EQ(r.shareable, uint64_t{40448} << 20);
    EXPECT_EQ(r.kind, ReservationKind::kK8s);
  }
  EXPECT_THAT((std::vector<std::string>{held[0].share, held[1].share}),
              ::testing::UnorderedElementsAre(kShareA, kShareB));

  const json spec = Spec(a.uid);
  EXPECT_EQ(spec["devices"][0]["name"], StrCat(a.uid, "-gpu-0-share-", kShareA));
  EXPECT_FALSE(spec["devices"][0]["containerEdits"].contains("env"));
  // The share is told in its request's environment (ADR 0014).
  EXPECT_EQ(spec["devices"][1]["name"], StrCat(a.uid, "-request-gpu"));
  EXPECT_EQ(spec["devices"][1]["containerEdits"]["env"],
            json({"CUDA_VISIBLE_DEVICES=0", "NVIDIA_VISIBLE_DEVICES=GPU-00000000",
                  "CANHAZGPU_GPU_MEM=10737418240", "CANHAZGPU_GPU_MEM_TOTAL=42949672960",
                  "CANHAZGPU_MEMORY_ISOLATION=none"}));
  EXPECT_EQ(checkpoint_->Find(b.uid)->devices[0].share_id, kShareB);

  // One share's unprepare leaves the other's.
  EXPECT_EQ(preparer_->UnprepareClaims({a}, {})[a.uid], "");
  held = Reservations();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].share, kShareB);
  EXPECT_TRUE(fs::exists(SpecFile(b.uid)));
  EXPECT_FALSE(fs::exists(SpecFile(a.uid)));
}

// Two shares in one container: its request's environment lists each
// GPU's share in CUDA order; two requests each tell their own.
TEST_F(SharedGpuPreparerTest, ARequestOfTwoSharedGpusIsToldEachShareInCudaOrder) {
  const ClaimRef both =
      testing::CreateAllocatedShareClaim(*client_, "ml", "both",
                                         {{"gpu-0", kShareA, "10Gi"}, {"gpu-1", kShareB, "20Gi"}},
                                         "node-a", "both-pod")
          .value();
  ASSERT_EQ(preparer_->PrepareClaims({both}, {})[both.uid].error, "");
  json spec = Spec(both.uid);
  ASSERT_EQ(spec["devices"].size(), 3u);  // two shares, the request's environment
  EXPECT_EQ(
      spec["devices"][2]["containerEdits"]["env"],
      json({"CUDA_VISIBLE_DEVICES=0,1", "NVIDIA_VISIBLE_DEVICES=GPU-00000000,GPU-00000001",
            "CANHAZGPU_GPU_MEM=10737418240,21474836480",
            "CANHAZGPU_GPU_MEM_TOTAL=42949672960,42949672960", "CANHAZGPU_MEMORY_ISOLATION=none"}));

  const ClaimRef pair = testing::CreateAllocatedShareClaim(*client_, "ml", "pair",
                                                           {{"gpu-2", kShareC, "5Gi", "first"},
                                                            {"gpu-3", kShareD, "7Gi", "second"}},
                                                           "node-a", "pair-pod")
                            .value();
  ASSERT_EQ(preparer_->PrepareClaims({pair}, {})[pair.uid].error, "");
  spec = Spec(pair.uid);
  ASSERT_EQ(spec["devices"].size(), 4u);
  EXPECT_EQ(spec["devices"][2]["name"], StrCat(pair.uid, "-request-first"));
  EXPECT_THAT(spec["devices"][2]["containerEdits"]["env"].dump(),
              HasSubstr("\"CANHAZGPU_GPU_MEM=5368709120\""));
  EXPECT_EQ(spec["devices"][3]["name"], StrCat(pair.uid, "-request-second"));
  EXPECT_THAT(spec["devices"][3]["containerEdits"]["env"].dump(),
              HasSubstr("\"CANHAZGPU_GPU_MEM=7516192768\""));
  EXPECT_EQ(testing::CdiSchemaErrors(spec, dir_), "");
}

TEST_F(SharedGpuPreparerTest, AWholeClaimAndAShareThatDoesNotFitWaitNamingTheHolders) {
  const ClaimRef a = Share("a", "gpu-0", kShareA, "30Gi");
  ASSERT_EQ(preparer_->PrepareClaims({a}, {})[a.uid].error, "");
  const ClaimRef whole = Allocated("whole", {"gpu-0"});
  const std::string refused = preparer_->PrepareClaims({whole}, {})[whole.uid].error;
  EXPECT_THAT(refused, HasSubstr("claim ml/a"));
  EXPECT_THAT(refused, HasSubstr("a share of 30Gi"));
  EXPECT_THAT(refused, HasSubstr("the pod starts once it is released"));
  const ClaimRef big = Share("big", "gpu-0", kShareB, "10Gi");
  const std::string too_big = preparer_->PrepareClaims({big}, {})[big.uid].error;
  EXPECT_THAT(too_big, HasSubstr("a share of 10Gi does not fit, only 9.5Gi of 39.5Gi left"));
  EXPECT_EQ(Reservations().size(), 1u);
  EXPECT_EQ(checkpoint_->Find(big.uid), nullptr);
}

TEST_F(SharedGpuPreparerTest, HostSharesAndPodSharesNeverAddUpToMoreThanTheGpu) {
  ASSERT_TRUE(store_
                  ->Update([&](store::StateTransaction& tx) {
                    return tx.InsertReservation(Reservation{.gpu = 1,
                                                            .memory = uint64_t{20} << 30,
                                                            .share = "local-1",
                                                            .shareable = uint64_t{40448} << 20,
                                                            .uid = 1000,
                                                            .user = "alice",
                                                            .kind = ReservationKind::kManual,
                                                            .start = clock_.Now()});
                  })
                  .ok());
  const ClaimRef fits = Share("fits", "gpu-1", kShareA, "19Gi");
  EXPECT_EQ(preparer_->PrepareClaims({fits}, {})[fits.uid].error, "");
  const ClaimRef over = Share("over", "gpu-1", kShareC, "1Gi");
  const std::string error = preparer_->PrepareClaims({over}, {})[over.uid].error;
  EXPECT_THAT(error, HasSubstr("alice"));
  EXPECT_THAT(error, HasSubstr("only 512Mi of 39.5Gi left"));
}

TEST_F(SharedGpuPreparerTest, ALostShareReservationIsPutBack) {
  const ClaimRef a = Share("a", "gpu-2", kShareA, "10Gi");
  const ClaimRef b = Share("b", "gpu-2", kShareB, "10Gi");
  ASSERT_EQ(preparer_->PrepareClaims({a, b}, {})[b.uid].error, "");
  ASSERT_TRUE(store::ReleaseClaim(*store_, a.uid, clock_.Now()).ok());
  std::vector<LostReservation> lost = preparer_->ReassertReservations();
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].claim.uid, a.uid);
  EXPECT_THAT(lost[0].restored, ElementsAre(2));
  std::vector<Reservation> held = Reservations();
  ASSERT_EQ(held.size(), 2u);
  EXPECT_TRUE(preparer_->ReassertReservations().empty());
}

TEST_F(SharedGpuPreparerTest, AFaultOnAGpuRefusesEveryShareOfIt) {
  node_.taints["gpu-3"] = {{.key = "gpu.canhazgpu.dev/xid", .value = "79", .effect = "NoExecute"}};
  for (const char* share : {kShareA, kShareB}) {
    const ClaimRef c = Share(std::string("c") + share[1], "gpu-3", share, "1Gi");
    EXPECT_THAT(preparer_->PrepareClaims({c}, {})[c.uid].error, HasSubstr("is tainted"));
  }
  EXPECT_TRUE(Reservations().empty());
}

TEST_F(ClaimPreparerTest, AShareOnANodeThatDoesNotShareIsRefused) {
  const ClaimRef a = testing::CreateAllocatedShareClaim(*client_, "ml", "a",
                                                        {{"gpu-0", kShareA, "10Gi"}}, "node-a")
                         .value();
  EXPECT_THAT(preparer_->PrepareClaims({a}, {})[a.uid].error,
              HasSubstr("which this node does not share"));
  EXPECT_TRUE(Reservations().empty());
}

// Shares under MPS: the stand-in nvidia-cuda-mps-control (tests/fake_mps)
// under the driver root makes the GPUs' isolation "mps".
class MpsSharePreparerTest : public SharedGpuPreparerTest {
 protected:
  void SetUp() override {
    SharedGpuPreparerTest::SetUp();
    char state[] = "/tmp/mpsdrvXXXXXX";  // short: MPS sockets live below it
    ASSERT_NE(mkdtemp(state), nullptr);
    mps_state_ = state;
    std::vector<GpuInfo> gpus;
    for (int i = 0; i < 4; ++i) gpus.push_back(TestGpu(i));
    const SharingOptions sharing{.enabled = true, .driver_root = FAKE_MPS_DRIVER_ROOT};
    node_ = NodeDevices{.pool = dra::BuildDevicePool(gpus, "node-a", PoolOptionsFor(sharing))};
    ApplySharing(node_, gpus, {}, sharing);
    mps_ = NewDaemons();
    PreparerOptions options = Options();
    options.mps = mps_.get();
    MakePreparer(options);
  }
  void TearDown() override {
    // Nothing is left running, whatever the test did.
    NewDaemons()->Recover({}).IgnoreError();
    fs::remove_all(mps_state_);
    SharedGpuPreparerTest::TearDown();
  }
  std::unique_ptr<mps::MpsDaemons> NewDaemons() {
    return std::make_unique<mps::MpsDaemons>(
        mps::MpsOptions{.driver_root = FAKE_MPS_DRIVER_ROOT, .state_dir = mps_state_ + "/s"},
        processes_, RealClock());
  }
  std::string mps_state_;
  host::LinuxProcessTable processes_;
  std::unique_ptr<mps::MpsDaemons> mps_;
};

TEST_F(MpsSharePreparerTest, TheFirstShareStartsTheGpusDaemonTheLastStopsIt) {
  EXPECT_EQ(node_.pool.devices[0].StringAttribute(dra::kMemoryIsolationAttribute), "mps");
  const ClaimRef a = Share("a", "gpu-0", kShareA, "10Gi");
  const ClaimRef b = Share("b", "gpu-0", kShareB, "20Gi");
  ASSERT_EQ(preparer_->PrepareClaims({a}, {})[a.uid].error, "");
  const std::optional<int64_t> pid = mps_->DaemonPid("GPU-00000000");
  ASSERT_TRUE(pid.has_value());
  ASSERT_EQ(preparer_->PrepareClaims({b}, {})[b.uid].error, "");
  EXPECT_EQ(mps_->DaemonPid("GPU-00000000"), pid);  // one daemon per GPU
  EXPECT_THAT(mps_->Shares("GPU-00000000"), ElementsAre(kShareA, kShareB));

  // Each share's limits, in its request's environment; the daemon's pipe
  // directory bound in with the share's device.
  const std::string pipe = mps_->PipeDir("GPU-00000000");
  EXPECT_EQ(Spec(a.uid)["devices"][1]["containerEdits"]["env"],
            json({"CUDA_VISIBLE_DEVICES=0", "NVIDIA_VISIBLE_DEVICES=GPU-00000000",
                  "CANHAZGPU_GPU_MEM=10737418240", "CANHAZGPU_GPU_MEM_TOTAL=42949672960",
                  "CANHAZGPU_MEMORY_ISOLATION=mps", "CUDA_MPS_PIPE_DIRECTORY=" + pipe,
                  "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-00000000=10240M",
                  "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=26"}));
  EXPECT_EQ(Spec(a.uid)["devices"][0]["containerEdits"]["mounts"][0]["hostPath"], pipe);
  const json env_b = Spec(b.uid)["devices"][1]["containerEdits"]["env"];
  EXPECT_THAT(env_b.dump(), HasSubstr("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-00000000=20480M"));
  EXPECT_THAT(env_b.dump(), HasSubstr("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=51"));

  EXPECT_EQ(preparer_->UnprepareClaims({a}, {})[a.uid], "");
  EXPECT_EQ(mps_->DaemonPid("GPU-00000000"), pid);  // b still has it
  EXPECT_EQ(preparer_->UnprepareClaims({b}, {})[b.uid], "");
  EXPECT_EQ(mps_->DaemonPid("GPU-00000000"), std::nullopt);
  EXPECT_FALSE(fs::exists(pipe));
}

// One process reaches one MPS daemon, and each GPU has its own: a request
// whose MPS shares are on two GPUs is refused before anything is held;
// two requests, each named by its own container, each get their GPU's.
TEST_F(MpsSharePreparerTest, ARequestOfTwoMpsGpusIsRefusedTwoRequestsAreNot) {
  const ClaimRef both =
      testing::CreateAllocatedShareClaim(*client_, "ml", "both",
                                         {{"gpu-0", kShareA, "10Gi"}, {"gpu-1", kShareB, "20Gi"}},
                                         "node-a", "both-pod")
          .value();
  const std::string refused = preparer_->PrepareClaims({both}, {})[both.uid].error;
  EXPECT_EQ(refused,
            "claim ml/both: its request gpu has shares of gpu-0 and gpu-1 under MPS, and a "
            "container's processes reach one GPU's MPS daemon (CUDA_MPS_PIPE_DIRECTORY); ask for "
            "each shared GPU in a request of its own, named by its own container");
  EXPECT_TRUE(Reservations().empty());
  EXPECT_EQ(checkpoint_->Find(both.uid), nullptr);
  EXPECT_EQ(mps_->DaemonPid("GPU-00000000"), std::nullopt);

  const ClaimRef pair = testing::CreateAllocatedShareClaim(*client_, "ml", "pair",
                                                           {{"gpu-0", kShareC, "10Gi", "first"},
                                                            {"gpu-1", kShareD, "20Gi", "second"}},
                                                           "node-a", "pair-pod")
                            .value();
  ASSERT_EQ(preparer_->PrepareClaims({pair}, {})[pair.uid].error, "");
  const json spec = Spec(pair.uid);
  const std::string first = spec["devices"][2]["containerEdits"]["env"].dump();
  const std::string second = spec["devices"][3]["containerEdits"]["env"].dump();
  EXPECT_THAT(first, HasSubstr("CUDA_MPS_PIPE_DIRECTORY=" + mps_->PipeDir("GPU-00000000")));
  EXPECT_THAT(first, HasSubstr("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-00000000=10240M\""));
  EXPECT_THAT(second, HasSubstr("CUDA_MPS_PIPE_DIRECTORY=" + mps_->PipeDir("GPU-00000001")));
  EXPECT_THAT(second, HasSubstr("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-00000001=20480M\""));
  EXPECT_EQ(preparer_->UnprepareClaims({pair}, {})[pair.uid], "");
}

// A claim checkpointed with mps-dmem (before the node capped what it
// publishes for pods) is told mps when its spec is written again: the node
// never writes a pod's dmem.max.
TEST_F(MpsSharePreparerTest, ARestoredShareIsNeverToldDmem) {
  CheckpointClaim old{
      .uid = "old-uid", .namespace_name = "ml", .name = "old", .state = PrepareState::kCompleted};
  old.devices.push_back({.requests = {"gpu"},
                         .pool = "node-a",
                         .device = "gpu-3",
                         .gpu = 3,
                         .share_id = kShareD,
                         .memory = uint64_t{1} << 30,
                         .shareable = uint64_t{40448} << 20,
                         .isolation = "mps-dmem"});
  ASSERT_TRUE(checkpoint_->Put(old).ok());
  MakePreparer([&] {
    PreparerOptions options = Options();
    options.mps = mps_.get();
    return options;
  }());
  EXPECT_THAT(preparer_->Restore(), ::testing::IsEmpty());
  const std::string env = Spec("old-uid")["devices"][1]["containerEdits"]["env"].dump();
  EXPECT_THAT(env, HasSubstr("CANHAZGPU_MEMORY_ISOLATION=mps\""));
  EXPECT_THAT(env, Not(HasSubstr("mps-dmem")));
  ASSERT_TRUE(mps_->Release(kShareD).ok());
}

TEST_F(MpsSharePreparerTest, ARestartedDaemonAdoptsTheLiveSharesAndDropsTheHalfDone) {
  const ClaimRef a = Share("a", "gpu-1", kShareA, "10Gi");
  ASSERT_EQ(preparer_->PrepareClaims({a}, {})[a.uid].error, "");
  const std::optional<int64_t> pid = mps_->DaemonPid("GPU-00000001");
  ASSERT_TRUE(pid.has_value());
  // A share whose prepare never completed (killed before PrepareCompleted),
  // and the MPS share a killed daemon had acquired for it.
  CheckpointClaim half{.uid = "half-uid", .namespace_name = "ml", .name = "half"};
  half.devices.push_back({.requests = {"gpu"},
                          .pool = "node-a",
                          .device = "gpu-2",
                          .gpu = 2,
                          .share_id = kShareC,
                          .memory = uint64_t{1} << 30,
                          .shareable = uint64_t{40448} << 20,
                          .isolation = "mps"});
  ASSERT_TRUE(checkpoint_->Put(half).ok());
  ASSERT_TRUE(mps_->Acquire({.gpu_uuid = "GPU-00000002",
                             .share_id = kShareC,
                             .share_bytes = uint64_t{1} << 30,
                             .shareable_bytes = uint64_t{40448} << 20})
                  .ok());
  ASSERT_TRUE(mps_->DaemonPid("GPU-00000002").has_value());

  // The node daemon starts again: new MPS daemons object, new preparer.
  mps_ = NewDaemons();
  PreparerOptions options = Options();
  options.mps = mps_.get();
  MakePreparer(options);
  EXPECT_THAT(preparer_->Restore(), ::testing::IsEmpty());
  EXPECT_EQ(mps_->DaemonPid("GPU-00000001"), pid);  // adopted, still serving
  EXPECT_EQ(mps_->DaemonPid("GPU-00000002"), std::nullopt);
  EXPECT_EQ(checkpoint_->Find("half-uid"), nullptr);
  EXPECT_THAT(Spec(a.uid)["devices"][1]["containerEdits"]["env"].dump(),
              HasSubstr("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-00000001=10240M"));
  EXPECT_EQ(preparer_->UnprepareClaims({a}, {})[a.uid], "");
  EXPECT_EQ(mps_->DaemonPid("GPU-00000001"), std::nullopt);
}

}  // namespace
}  // namespace canhazgpu::driver
