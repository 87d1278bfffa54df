// The isolation a host `run --gpu-mem` job gets, against a driver root and
// a cgroup tree made of plain files in a temp directory, and the lines that
// say it.
#include "cli/canhazgpu/share_isolation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "store/memory_state_store.h"

namespace canhazgpu::cli {
namespace {

using mps::MemoryIsolation;
using ::testing::HasSubstr;

constexpr uint64_t kGiB = uint64_t{1} << 30;

void WriteShareText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

class ShareIsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/shisoXXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    tmp_ = dir;
    sharing_.driver_root = tmp_ + "/driver";
    sharing_.cgroup_root = tmp_ + "/cgroup";
    share_ = {.gpu = 0,
              .gpu_uuid = "GPU-aaaaaaaa-0000-0000-0000-000000000001",
              .pci_bus_id = "00000000:1B:00.0",
              .cuda_driver_version = "13.4",
              .share_id = "s1",
              .bytes = 10 * kGiB,
              .shareable = 79 * kGiB,
              .total = 80 * kGiB};
    gpu_.index = 0;
    gpu_.uuid = share_.gpu_uuid;
    gpu_.pci_bus_id = share_.pci_bus_id;
    gpu_.cuda_driver_version = "13.4";
    gpu_.memory_total_bytes = 80 * kGiB;
  }
  void TearDown() override { std::filesystem::remove_all(tmp_); }

  void InstallMps() {
    const std::string program = sharing_.driver_root + "/usr/bin/nvidia-cuda-mps-control";
    WriteShareText(program, "#!/bin/sh\n");
    chmod(program.c_str(), 0755);
  }
  // A cgroup v2 root with dmem and the GPU's region, and a parent cgroup
  // that hands dmem to its children.
  void MakeDmemHost() {
    WriteShareText(sharing_.cgroup_root + "/cgroup.controllers", "cpu memory dmem\n");
    WriteShareText(sharing_.cgroup_root + "/dmem.capacity",
                   "nvidia/0000:1b:00.0/vidmem 85899345920\n");
    sharing_.dmem_cgroup = sharing_.cgroup_root + "/canhazgpu";
    WriteShareText(sharing_.dmem_cgroup + "/cgroup.subtree_control", "memory dmem\n");
  }

  std::string tmp_;
  HostSharing sharing_;
  JobShare share_;
  GpuInfo gpu_;
};

TEST_F(ShareIsolationTest, NoneWithoutTheControlProgramAndSaysWhy) {
  IsolationChoice choice = ChooseIsolation(sharing_, {share_}, false, "");
  EXPECT_EQ(choice.level, MemoryIsolation::kNone);
  EXPECT_EQ(choice.note, "no " + sharing_.driver_root + "/usr/bin/nvidia-cuda-mps-control");
  EXPECT_EQ(IsolationLine(choice, {share_}),
            "memory isolation: none (the share is booked, not enforced; no " +
                sharing_.driver_root +
                "/usr/bin/nvidia-cuda-mps-control; the job is told CANHAZGPU_GPU_MEM)");
}

TEST_F(ShareIsolationTest, MpsWhereTheControlProgramIs) {
  InstallMps();
  IsolationChoice choice = ChooseIsolation(sharing_, {share_}, false, "");
  EXPECT_EQ(choice.level, MemoryIsolation::kMps);
  EXPECT_EQ(choice.note, "");
  EXPECT_EQ(IsolationLine(choice, {share_}),
            "memory isolation: mps (each process limited to 10Gi of GPU 0 by MPS; see "
            "docs/sharing.md)");
}

TEST_F(ShareIsolationTest, TheAdminsSwitchAndSeveralGpusGiveNone) {
  InstallMps();
  HostSharing off = sharing_;
  off.enforce = false;
  EXPECT_EQ(ChooseIsolation(off, {share_}, false, "").level, MemoryIsolation::kNone);
  EXPECT_THAT(ChooseIsolation(off, {share_}, false, "").note, HasSubstr("share-isolation is none"));
  JobShare second = share_;
  second.gpu = 1;
  IsolationChoice two = ChooseIsolation(sharing_, {share_, second}, false, "");
  EXPECT_EQ(two.level, MemoryIsolation::kNone);
  EXPECT_THAT(two.note, HasSubstr("MPS limits a process on one GPU"));
  EXPECT_THAT(IsolationLine(two, {share_, second}), HasSubstr("memory isolation: none"));
}

TEST_F(ShareIsolationTest, DmemOnlyForAJobInTheDmemParent) {
  InstallMps();
  MakeDmemHost();
  EXPECT_EQ(DmemParentProblem(sharing_, {gpu_}), "");
  IsolationChoice dmem = ChooseIsolation(sharing_, {share_}, true, "");
  EXPECT_EQ(dmem.level, MemoryIsolation::kMpsDmem);
  EXPECT_THAT(IsolationLine(dmem, {share_}),
              HasSubstr("memory isolation: mps-dmem (the job's cgroup limited to 10Gi of GPU 0 "
                        "by the kernel's dmem.max, each process by MPS"));
  // --no-cgroup (or any reason the job is elsewhere): MPS alone, and why.
  IsolationChoice elsewhere = ChooseIsolation(sharing_, {share_}, false, "--no-cgroup");
  EXPECT_EQ(elsewhere.level, MemoryIsolation::kMps);
  EXPECT_EQ(elsewhere.note, "no dmem: --no-cgroup");
  // A GPU whose region dmem.capacity does not list.
  JobShare other = share_;
  other.pci_bus_id = "0000:99:00.0";
  IsolationChoice unlisted = ChooseIsolation(sharing_, {other}, true, "");
  EXPECT_EQ(unlisted.level, MemoryIsolation::kMps);
  EXPECT_THAT(unlisted.note, HasSubstr("dmem.capacity has no region for GPU 0"));
}

TEST_F(ShareIsolationTest, DmemParentProblemsAreNamed) {
  EXPECT_EQ(DmemParentProblem(sharing_, {gpu_}), "no dmem-cgroup is set");
  MakeDmemHost();
  EXPECT_THAT(DmemParentProblem(sharing_, {gpu_}), HasSubstr("nvidia-cuda-mps-control"));
  InstallMps();
  WriteShareText(sharing_.dmem_cgroup + "/cgroup.subtree_control", "memory\n");
  EXPECT_EQ(DmemParentProblem(sharing_, {gpu_}),
            "dmem is not in " + sharing_.dmem_cgroup + "/cgroup.subtree_control");
  WriteShareText(sharing_.dmem_cgroup + "/cgroup.subtree_control", "dmem\n");
  GpuInfo old = gpu_;
  old.cuda_driver_version = "13.3";
  EXPECT_EQ(DmemParentProblem(sharing_, {old}), "the driver's CUDA is older than 13.4");
  GpuInfo unknown = gpu_;
  unknown.cuda_driver_version = "";  // a provider that does not say: no dmem
  EXPECT_EQ(DmemParentProblem(sharing_, {unknown}), "the driver's CUDA is older than 13.4");
  WriteShareText(sharing_.cgroup_root + "/cgroup.controllers", "cpu memory\n");
  EXPECT_EQ(DmemParentProblem(sharing_, {gpu_}),
            sharing_.cgroup_root + " offers no dmem controller");
}

TEST_F(ShareIsolationTest, AReservationIsBookedOnlyAndSaysWhatRunWouldGive) {
  EXPECT_EQ(ReservationIsolation(sharing_, {gpu_}, {0}),
            "memory isolation: none, the share is booked, not enforced");
  InstallMps();
  EXPECT_EQ(ReservationIsolation(sharing_, {gpu_}, {0}),
            "memory isolation: none, the share is booked, not enforced; for MPS limits run the "
            "job with canhazgpu run --gpu-mem");
}

TEST_F(ShareIsolationTest, ReadJobSharesFindsTheJobsSharesWithTheirGpus) {
  store::MemoryStateStore store;
  const ProcessRef job{41, 7};
  ASSERT_TRUE(store
                  .Update([&](store::StateTransaction& txn) -> absl::Status {
                    Reservation mine{.gpu = 0,
                                     .memory = 10 * kGiB,
                                     .share = "s1",
                                     .shareable = 79 * kGiB,
                                     .uid = 1000,
                                     .kind = ReservationKind::kRun,
                                     .process = job};
                    Reservation other = mine;
                    other.share = "s2";
                    other.process = ProcessRef{42, 8};
                    if (absl::Status s = txn.InsertReservation(mine); !s.ok()) return s;
                    return txn.InsertReservation(other);
                  })
                  .ok());
  absl::StatusOr<std::vector<JobShare>> shares = ReadJobShares(store, job, {gpu_});
  ASSERT_TRUE(shares.ok()) << shares.status();
  ASSERT_EQ(shares->size(), 1u);
  EXPECT_EQ((*shares)[0].share_id, "s1");
  EXPECT_EQ((*shares)[0].gpu_uuid, gpu_.uuid);
  EXPECT_EQ((*shares)[0].bytes, 10 * kGiB);
  EXPECT_EQ((*shares)[0].total, 80 * kGiB);
  EXPECT_FALSE(ReadJobShares(store, job, {}).ok()) << "a GPU not on this host";
}

}  // namespace
}  // namespace canhazgpu::cli
