#include "alloc/model_detection.h"

#include <gtest/gtest.h>

namespace canhazgpu::alloc {
namespace {

std::string Model(std::vector<std::string> argv) {
  auto info = DetectModel(argv);
  return info ? info->model : "";
}

TEST(ModelDetectionTest, VllmServePositional) {
  auto info = DetectModel({"/usr/bin/python3", "/venv/bin/vllm", "serve",
                           "meta-llama/Llama-3.1-8B-Instruct", "--tensor-parallel-size", "2"});
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(info->provider, "meta-llama");
}

TEST(ModelDetectionTest, VllmModelFlagForms) {
  EXPECT_EQ(Model({"python", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen2"}),
            "Qwen/Qwen2");
  EXPECT_EQ(Model({"vllm", "serve", "--model=ibm-granite/granite-8b"}), "ibm-granite/granite-8b");
  EXPECT_EQ(Model({"vllm", "serve", "--port", "8000"}), "") << "flag after serve is no model";
}

TEST(ModelDetectionTest, WrappedAndAbsolutePaths) {
  EXPECT_EQ(Model({"canhazgpu", "run", "--gpus", "2", "--", "vllm", "serve", "/mnt/nvme4/m"}),
            "/mnt/nvme4/m");
  auto info = DetectModel({"vllm", "serve", "facebook/opt-125m"});
  EXPECT_EQ(info->provider, "facebook");
  EXPECT_EQ(DetectModel({"vllm", "serve", "local-model"})->provider, "");
}

TEST(ModelDetectionTest, GenericModelFlag) {
  EXPECT_EQ(Model({"python", "train.py", "--model", "mistralai/Mistral-7B"}),
            "mistralai/Mistral-7B");
  EXPECT_EQ(Model({"python", "train.py", "--epochs", "3"}), "");
  EXPECT_EQ(Model({}), "");
}

TEST(ModelDetectionTest, LmEvalModelArgs) {
  EXPECT_EQ(Model({"lm_eval", "--model", "vllm", "--model_args",
                   "pretrained=meta-llama/Llama-2-7b,tensor_parallel_size=2"}),
            "meta-llama/Llama-2-7b");
  EXPECT_EQ(
      Model({"/venv/bin/lm_eval", "--model_args", "pretrained=/models/Qwen2.5-7B,dtype=auto"}),
      "qwen/Qwen2.5-7B");
  EXPECT_EQ(Model({"lm_eval", "--model_args", "pretrained=/models/unknown-thing"}), "");
  EXPECT_EQ(
      Model({"lm_eval", "--model_args", R"({"pretrained": "org/na\"me", "args": {"x": "}"}})"}),
      "org/na\"me");
}

TEST(ModelDetectionTest, TruncatesLongNames) {
  std::string name(60, 'a');
  EXPECT_EQ(Model({"vllm", "serve", name}), std::string(50, 'a') + "...");
}

}  // namespace
}  // namespace canhazgpu::alloc
