// proto/cri/api.proto must keep the published runtime.v1 names and field
// numbers (k8s.io/cri-api pkg/apis/runtime/v1/api.proto), or containerd
// and CRI-O would read our requests as something else. This pins them.
#include <string>

#include "cri/api.grpc.pb.h"
#include "gtest/gtest.h"

namespace canhazgpu::cri {
namespace {

struct PublishedField {
  const char* message;
  const char* field;
  int number;
};

constexpr PublishedField kPublished[] = {
    {"ImageSpec", "image", 1},
    {"ImageSpec", "annotations", 2},
    {"ImageSpec", "user_specified_image", 18},
    {"ImageSpec", "runtime_handler", 19},
    {"ImageSpec", "image_ref", 20},
    {"AuthConfig", "username", 1},
    {"AuthConfig", "password", 2},
    {"AuthConfig", "auth", 3},
    {"AuthConfig", "server_address", 4},
    {"AuthConfig", "identity_token", 5},
    {"AuthConfig", "registry_token", 6},
    {"PodSandboxMetadata", "name", 1},
    {"PodSandboxMetadata", "uid", 2},
    {"PodSandboxMetadata", "namespace", 3},
    {"PodSandboxMetadata", "attempt", 4},
    {"PodSandboxConfig", "metadata", 1},
    {"PodSandboxConfig", "hostname", 2},
    {"PodSandboxConfig", "log_directory", 3},
    {"PodSandboxConfig", "labels", 6},
    {"PodSandboxConfig", "annotations", 7},
    {"Int64Value", "value", 1},
    {"UInt64Value", "value", 1},
    {"ImageFilter", "image", 1},
    {"ListImagesRequest", "filter", 1},
    {"Image", "id", 1},
    {"Image", "repo_tags", 2},
    {"Image", "repo_digests", 3},
    {"Image", "size", 4},
    {"Image", "uid", 5},
    {"Image", "username", 6},
    {"Image", "spec", 7},
    {"Image", "pinned", 8},
    {"ListImagesResponse", "images", 1},
    {"ImageStatusRequest", "image", 1},
    {"ImageStatusRequest", "verbose", 2},
    {"ImageStatusResponse", "image", 1},
    {"ImageStatusResponse", "info", 2},
    {"PullImageRequest", "image", 1},
    {"PullImageRequest", "auth", 2},
    {"PullImageRequest", "sandbox_config", 3},
    {"PullImageResponse", "image_ref", 1},
    {"RemoveImageRequest", "image", 1},
    {"FilesystemIdentifier", "mountpoint", 1},
    {"FilesystemUsage", "timestamp", 1},
    {"FilesystemUsage", "fs_id", 2},
    {"FilesystemUsage", "used_bytes", 3},
    {"FilesystemUsage", "inodes_used", 4},
    {"ImageFsInfoResponse", "image_filesystems", 1},
    {"ImageFsInfoResponse", "container_filesystems", 2},
};

TEST(ProtoFieldsTest, NamesAndNumbersAreThePublishedOnes) {
  const google::protobuf::DescriptorPool* pool = google::protobuf::DescriptorPool::generated_pool();
  for (const PublishedField& published : kPublished) {
    std::string message = std::string("runtime.v1.") + published.message;
    const google::protobuf::Descriptor* descriptor = pool->FindMessageTypeByName(message);
    ASSERT_NE(descriptor, nullptr) << message;
    const google::protobuf::FieldDescriptor* field = descriptor->FindFieldByName(published.field);
    ASSERT_NE(field, nullptr) << message << "." << published.field;
    EXPECT_EQ(field->number(), published.number) << message << "." << published.field;
  }
}

TEST(ProtoFieldsTest, ServiceAndMethodPathsAreThePublishedOnes) {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          "runtime.v1.ImageService");
  ASSERT_NE(service, nullptr);
  for (const char* method :
       {"ListImages", "ImageStatus", "PullImage", "RemoveImage", "ImageFsInfo"}) {
    EXPECT_NE(service->FindMethodByName(method), nullptr) << method;
  }
}

}  // namespace
}  // namespace canhazgpu::cri
