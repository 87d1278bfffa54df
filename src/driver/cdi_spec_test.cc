#include "driver/cdi_spec.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "driver/testing/cdi_schema.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::driver {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

class CdiSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cdi_spec_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Touch(const std::string& path, const std::string& text = "") {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
  }
  std::string SchemaErrors(const json& spec) { return testing::CdiSchemaErrors(spec, dir_); }

  std::string dir_;
};

ClaimCdiInput TwoGpusAndAMig() {
  return {.claim_uid = "0f4c2d8e-uid",
          .claim_namespace = "ml",
          .claim_name = "train-gpus",
          .devices = {{.name = "gpu-3", .uuid = "GPU-3", .gpu_minor = 3},
                      {.name = "gpu-5", .uuid = "GPU-5", .gpu_minor = 5},
                      {.name = "gpu-0-mig-1g5gb-19-0",
                       .uuid = "MIG-0-a",
                       .gpu_minor = 0,
                       .is_mig = true,
                       .extra_device_nodes = {"/dev/nvidia-caps/nvidia-cap12"}}}};
}

TEST_F(CdiSpecTest, OneCdiDevicePerAllocatedDeviceAndTheClaimsEnvironment) {
  const json spec = ClaimCdiSpec(TwoGpusAndAMig());
  EXPECT_EQ(spec["kind"], "k8s.gpu.canhazgpu.dev/claim");
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  ASSERT_EQ(spec["devices"].size(), 4u);
  EXPECT_EQ(spec["devices"][0]["name"], "0f4c2d8e-uid-gpu-3");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"],
            (json{{{"path", "/dev/nvidia3"}}}));
  EXPECT_EQ(spec["devices"][2]["containerEdits"]["deviceNodes"],
            (json{{{"path", "/dev/nvidia0"}}, {{"path", "/dev/nvidia-caps/nvidia-cap12"}}}));
  // Devices that serve no named request: one environment for the claim.
  EXPECT_EQ(spec["devices"][3]["name"], "0f4c2d8e-uid-claim-env");
  EXPECT_THAT(spec["devices"][3]["containerEdits"]["env"],
              ElementsAre("CUDA_VISIBLE_DEVICES=0,1,MIG-0-a",
                          "NVIDIA_VISIBLE_DEVICES=GPU-3,GPU-5,MIG-0-a"));
  EXPECT_THAT(spec["containerEdits"]["env"], ElementsAre("CANHAZGPU_CLAIM=ml/train-gpus"));
  EXPECT_EQ(spec["containerEdits"]["deviceNodes"], (json{{{"path", "/dev/nvidiactl"}},
                                                         {{"path", "/dev/nvidia-uvm"}},
                                                         {{"path", "/dev/nvidia-uvm-tools"}}}));
  EXPECT_FALSE(spec["containerEdits"].contains("mounts"));
  EXPECT_EQ(CdiDeviceId("0f4c2d8e-uid", "gpu-3"), "k8s.gpu.canhazgpu.dev/claim=0f4c2d8e-uid-gpu-3");
  EXPECT_THAT(CdiDeviceIdsFor("0f4c2d8e-uid", "gpu-3", {}),
              ElementsAre("k8s.gpu.canhazgpu.dev/claim=0f4c2d8e-uid-gpu-3",
                          "k8s.gpu.canhazgpu.dev/claim=0f4c2d8e-uid-claim-env"));
  EXPECT_EQ(SchemaErrors(spec), "");
  json broken = spec;  // the validator does reject what the schema forbids
  broken["devices"][0].erase("containerEdits");
  EXPECT_THAT(SchemaErrors(broken), HasSubstr("'containerEdits' is a required property"));
}

// Issue 30: the environment was spec-wide, so a container naming one
// request of a claim saw every request's GPUs.
TEST_F(CdiSpecTest, EachRequestHasItsOwnEnvironmentAndNothingDeviceSpecificIsSpecWide) {
  ClaimCdiInput input = TwoGpusAndAMig();
  input.devices[0].requests = {"ts-gpu"};
  input.devices[1].requests = {"sp-gpu/large"};  // a subrequest of firstAvailable
  input.devices[2].requests = {"ts-gpu"};
  const json spec = ClaimCdiSpec(input);
  ASSERT_EQ(spec["devices"].size(), 5u);
  EXPECT_EQ(spec["devices"][3]["name"], "0f4c2d8e-uid-request-ts-gpu");
  EXPECT_THAT(
      spec["devices"][3]["containerEdits"]["env"],
      ElementsAre("CUDA_VISIBLE_DEVICES=0,MIG-0-a", "NVIDIA_VISIBLE_DEVICES=GPU-3,MIG-0-a"));
  EXPECT_EQ(spec["devices"][4]["name"], "0f4c2d8e-uid-request-sp-gpu");
  EXPECT_THAT(spec["devices"][4]["containerEdits"]["env"],
              ElementsAre("CUDA_VISIBLE_DEVICES=0", "NVIDIA_VISIBLE_DEVICES=GPU-5"));
  for (const json& e : spec["containerEdits"]["env"]) {
    EXPECT_THAT(e.get<std::string>(), Not(HasSubstr("VISIBLE_DEVICES")));
  }
  EXPECT_EQ(SchemaErrors(spec), "");

  // A device's ids: its own, then its request's environment, by the name a
  // container gives the request.
  EXPECT_THAT(CdiDeviceIdsFor("u", "gpu-5", {"sp-gpu/large"}),
              ElementsAre("k8s.gpu.canhazgpu.dev/claim=u-gpu-5",
                          "k8s.gpu.canhazgpu.dev/claim=u-request-sp-gpu"));
  EXPECT_THAT(BaseRequestNames({"a/x", "a/y", "b"}), ElementsAre("a", "b"));
}

// Shares are told in their request's environment, combined: one variable
// each, listing every shared GPU of the request (the runtime keeps the last
// value of a variable set twice, so per-device values overwrote each other).
TEST_F(CdiSpecTest, ARequestsSharesAreToldTogetherInItsEnvironment) {
  const uint64_t gib = uint64_t{1} << 30;
  const uint64_t shareable = 40448ull << 20;
  auto share = [&](const std::string& name, const std::string& uuid, int minor, uint64_t memory,
                   const std::string& pipe, const std::string& request) {
    CdiDevice d{.name = name, .uuid = uuid, .gpu_minor = minor, .requests = {request}};
    d.share = CdiShare{.memory = memory,
                       .total = 40 * gib,
                       .shareable = shareable,
                       .isolation = pipe.empty() ? "none" : "mps",
                       .mps_pipe_dir = pipe};
    if (!pipe.empty()) d.mounts = {pipe};
    return d;
  };
  ClaimCdiInput input{.claim_uid = "u", .claim_namespace = "ml", .claim_name = "c"};
  // "gpu": two shares of GPU-0 under MPS (one GPU to CUDA, their memory
  // added); "other":
  // shares of two GPUs, one without MPS (so none is what it is told).
  input.devices = {share("gpu-0-share-a", "GPU-0", 0, 10 * gib, "/mps/GPU-0/pipe", "gpu"),
                   share("gpu-0-share-b", "GPU-0", 0, 6 * gib, "/mps/GPU-0/pipe", "gpu"),
                   share("gpu-1-share-c", "GPU-1", 1, 4 * gib, "/mps/GPU-1/pipe", "other"),
                   share("gpu-2-share-d", "GPU-2", 2, 2 * gib, "", "other")};
  const json spec = ClaimCdiSpec(input);
  ASSERT_EQ(spec["devices"].size(), 6u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_FALSE(spec["devices"][i]["containerEdits"].contains("env")) << i;
  }
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["mounts"][0]["hostPath"], "/mps/GPU-0/pipe");
  EXPECT_EQ(spec["devices"][4]["name"], "u-request-gpu");
  EXPECT_THAT(
      spec["devices"][4]["containerEdits"]["env"],
      ElementsAre("CUDA_VISIBLE_DEVICES=0", "NVIDIA_VISIBLE_DEVICES=GPU-0",
                  "CANHAZGPU_GPU_MEM=17179869184", "CANHAZGPU_GPU_MEM_TOTAL=42949672960",
                  "CANHAZGPU_MEMORY_ISOLATION=mps", "CUDA_MPS_PIPE_DIRECTORY=/mps/GPU-0/pipe",
                  "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-0=16384M",
                  "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=41"));
  EXPECT_EQ(spec["devices"][5]["name"], "u-request-other");
  EXPECT_THAT(
      spec["devices"][5]["containerEdits"]["env"],
      ElementsAre("CUDA_VISIBLE_DEVICES=0,1", "NVIDIA_VISIBLE_DEVICES=GPU-1,GPU-2",
                  "CANHAZGPU_GPU_MEM=4294967296,2147483648",
                  "CANHAZGPU_GPU_MEM_TOTAL=42949672960,42949672960",
                  "CANHAZGPU_MEMORY_ISOLATION=none", "CUDA_MPS_PIPE_DIRECTORY=/mps/GPU-1/pipe",
                  "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-1=4096M",
                  "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=11"));
  EXPECT_EQ(SchemaErrors(spec), "");
}

TEST_F(CdiSpecTest, DriverFilesAreMountedReadOnlyWhenTheToolkitHasNoSpec) {
  const std::string root = dir_ + "/driver-root";
  Touch(root + "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05");
  Touch(root + "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  Touch(root + "/usr/lib/x86_64-linux-gnu/libc.so.6");  // not the driver's
  Touch(root + "/usr/bin/nvidia-smi");
  Touch(root + "/usr/bin/bash");
  const DriverFiles files = FindDriverFiles(root);
  EXPECT_THAT(files.libraries, ElementsAre("/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                           "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05"));
  EXPECT_THAT(files.binaries, ElementsAre("/usr/bin/nvidia-smi"));

  ClaimCdiInput input = TwoGpusAndAMig();
  input.driver_files = files;
  const json spec = ClaimCdiSpec(input);
  ASSERT_EQ(spec["containerEdits"]["mounts"].size(), 3u);
  EXPECT_EQ(spec["containerEdits"]["mounts"][2],
            (json{{"hostPath", "/usr/bin/nvidia-smi"},
                  {"containerPath", "/usr/bin/nvidia-smi"},
                  {"options", {"ro", "nosuid", "nodev", "bind"}}}));
  EXPECT_EQ(SchemaErrors(spec), "");
  EXPECT_TRUE(FindDriverFiles(dir_ + "/nothing-here").libraries.empty());
}

TEST_F(CdiSpecTest, SpecsAreWrittenAtomicallyAndRemovedIdempotently) {
  const std::string cdi = dir_ + "/var/run/cdi";  // made on first use
  const json spec = ClaimCdiSpec(TwoGpusAndAMig());
  ASSERT_TRUE(WriteCdiSpec(cdi, "0f4c2d8e-uid", spec).ok());
  const std::string path = cdi + "/k8s.gpu.canhazgpu.dev-claim_0f4c2d8e-uid.json";
  std::ifstream in(path);
  EXPECT_EQ(json::parse(in), spec);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_TRUE(WriteCdiSpec(cdi, "0f4c2d8e-uid", spec).ok());  // again: same file
  EXPECT_EQ(std::distance(fs::directory_iterator(cdi), fs::directory_iterator()), 1);

  ASSERT_TRUE(RemoveCdiSpec(cdi, "0f4c2d8e-uid").ok());
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(RemoveCdiSpec(cdi, "0f4c2d8e-uid").ok());

  Touch(dir_ + "/a-file");
  absl::Status blocked = WriteCdiSpec(dir_ + "/a-file/cdi", "u", spec);
  EXPECT_FALSE(blocked.ok());
  EXPECT_THAT(blocked.message(), HasSubstr("a-file"));
}

// Issue 29 item 9: under umask 000 the directory was made 0777, so anyone
// could plant a spec giving a container any device.
TEST_F(CdiSpecTest, TheDirectoryIsMadeWritableByRootAloneWhateverTheUmask) {
  const std::string cdi = dir_ + "/run/cdi";
  const mode_t old = umask(0);
  const absl::Status written = WriteCdiSpec(cdi, "u", ClaimCdiSpec(TwoGpusAndAMig()));
  umask(old);
  ASSERT_TRUE(written.ok()) << written;
  for (const std::string& d : {dir_ + "/run", cdi}) {
    struct stat st;
    ASSERT_EQ(stat(d.c_str(), &st), 0) << d;
    EXPECT_EQ(st.st_mode & 07777, 0755u) << d;
  }
}

TEST_F(CdiSpecTest, TheToolkitsDevicesAreUsedOnlyWhenItNamesEveryGpu) {
  const std::string etc = dir_ + "/etc/cdi";
  Touch(etc + "/nvidia.yaml",
        "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n"
        "- name: \"0\"\n  containerEdits: {}\n"
        "- name: GPU-3\n  containerEdits: {}\n"
        "- name: all\n  containerEdits: {}\n");
  Touch(etc + "/other.yaml", "kind: example.com/fpga\ndevices:\n- name: GPU-5\n");
  Touch(etc + "/broken.yaml", "kind: [unclosed\n");
  const std::vector<std::string> dirs = {etc, dir_ + "/var/run/cdi"};
  EXPECT_THAT(ToolkitDeviceIds(dirs, {"GPU-3"}), ElementsAre("nvidia.com/gpu=GPU-3"));
  EXPECT_TRUE(ToolkitDeviceIds(dirs, {"GPU-3", "GPU-5"}).empty());
  EXPECT_TRUE(ToolkitDeviceIds({dir_ + "/none"}, {"GPU-3"}).empty());
}

}  // namespace
}  // namespace canhazgpu::driver
