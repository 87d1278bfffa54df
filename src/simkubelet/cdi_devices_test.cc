#include "simkubelet/cdi_devices.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubeletplugin/testing/plugin_harness.h"
#include "simkubelet/container_env.h"

namespace canhazgpu::simkubelet {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(CdiDevicesTest, SpecEditsFirstThenTheDevicesFromJsonAndYaml) {
  kubeletplugin::testing::TempDir dir;
  Write(dir.path() + "/a.json", R"({"cdiVersion": "0.5.0", "kind": "example.com/gpu",
    "containerEdits": {"env": ["COMMON=1"], "deviceNodes": [{"path": "/dev/ctl"}]},
    "devices": [{"name": "0", "containerEdits": {"env": ["GPU=0"],
                  "deviceNodes": [{"path": "/dev/gpu0"}],
                  "mounts": [{"hostPath": "/usr/lib/x.so", "containerPath": "/lib/x.so"}]}}]})");
  Write(dir.path() + "/b.yaml",
        "cdiVersion: 0.5.0\nkind: example.com/nic\ndevices:\n- name: eth1\n  containerEdits:\n"
        "    env: [NIC=eth1, GPU=overridden]\n");
  Write(dir.path() + "/broken.json", "{not json");
  auto edits = ResolveCdiDevices(dir.path(), {"example.com/gpu=0", "example.com/nic=eth1"});
  ASSERT_TRUE(edits.ok()) << edits.status();
  EXPECT_THAT(edits->env, ElementsAre("COMMON=1", "GPU=0", "NIC=eth1", "GPU=overridden"));
  EXPECT_THAT(edits->device_nodes, ElementsAre("/dev/ctl", "/dev/gpu0"));
  EXPECT_THAT(edits->mounts, ElementsAre("/usr/lib/x.so:/lib/x.so"));
}

TEST(CdiDevicesTest, AnUnknownIdIsUnresolvable) {
  kubeletplugin::testing::TempDir dir;
  auto edits = ResolveCdiDevices(dir.path(), {"example.com/gpu=7"});
  ASSERT_FALSE(edits.ok());
  EXPECT_EQ(edits.status().message(), "unresolvable CDI devices example.com/gpu=7");
}

TEST(ContainerEnvTest, LaterDefinitionsWinAndReferencesExpand) {
  const nlohmann::json pod = {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "u"}}},
                              {"spec", {{"nodeName", "n1"}}}};
  const nlohmann::json container = {
      {"env",
       {{{"name", "A"}, {"value", "x"}},
        {{"name", "B"}, {"value", "$(A)-y-$$(A)"}},
        {{"name", "NODE"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}},
        {{"name", "CUDA_VISIBLE_DEVICES"}, {"value", "9"}}}},
      {"command", {"echo", "$(B)"}}};
  CdiEdits cdi;
  cdi.env = {"CUDA_VISIBLE_DEVICES=0"};
  cdi.device_nodes = {"/dev/nvidia0", "/dev/nvidiactl"};
  auto env = ContainerEnvironment(pod, container, {"/w", "127.0.0.1"}, cdi);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_THAT(*env, ElementsAre(HasSubstr("PATH="), "HOSTNAME=p", "HOME=/w", "A=x", "B=x-y-$(A)",
                                "NODE=n1", "CUDA_VISIBLE_DEVICES=0",
                                "CANHAZGPU_SIM_DEVICE_NODES=/dev/nvidia0,/dev/nvidiactl"));
  EXPECT_THAT(ContainerArgv(container, *env), ElementsAre("echo", "x-y-$(A)"));
}

TEST(ContainerEnvTest, SecretsAreNotSupported) {
  const nlohmann::json container = {
      {"env", {{{"name", "S"}, {"valueFrom", {{"secretKeyRef", {{"name", "s"}}}}}}}}};
  auto env = ContainerEnvironment(nlohmann::json::object(), container, {"/w", ""}, {});
  ASSERT_FALSE(env.ok());
  EXPECT_THAT(env.status().message(), HasSubstr("env S: only value and valueFrom.fieldRef"));
}

}  // namespace
}  // namespace canhazgpu::simkubelet
