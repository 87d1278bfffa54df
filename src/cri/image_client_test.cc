// ImageClient and EnsureImage against the image-service emulator, over
// real unix sockets.
#include "cri/image_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "cri/api.grpc.pb.h"
#include "cri/ensure_image.h"
#include "cri/testing/fake_image_service.h"
#include "cri/testing/short_temp_dir.h"
#include "gmock/gmock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace canhazgpu::cri {
namespace {

using ::testing::ElementsAre;
using testing::FakeDigest;
using testing::FakeImageService;
using ::testing::HasSubstr;
using testing::RegistryImage;

constexpr std::chrono::seconds kGenerous{20};
const std::string kVllm = "public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:abc123";
const std::string kPrivate = "ghcr.io/acme/private:1.0";

std::string Message(const absl::Status& status) { return std::string(status.message()); }

class ImageClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.path() + "/containerd.sock";
    auto fake = FakeImageService::Start(socket_);
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    fake_->AddToRegistry(kVllm, RegistryImage{.size = 9'000'000'000});
    fake_->AddToRegistry(kPrivate,
                         RegistryImage{.size = 1234, .username = "alice", .password = "pw"});
  }

  testing::ShortTempDir dir_;
  std::string socket_;
  std::unique_ptr<FakeImageService> fake_;
};

TEST_F(ImageClientTest, PullThenStatusAndList) {
  ImageClient client(socket_);
  EXPECT_EQ(client.endpoint(), "unix://" + socket_);
  auto before = client.Status(kVllm);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_FALSE(before->has_value());

  auto ref = client.Pull(kVllm);
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(*ref, FakeDigest(kVllm));

  auto status = client.Status(kVllm);
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_TRUE(status->has_value());
  EXPECT_EQ((*status)->id, FakeDigest(kVllm));
  EXPECT_THAT((*status)->repo_tags, ElementsAre(kVllm));
  EXPECT_THAT((*status)->repo_digests,
              ElementsAre("public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo@" + FakeDigest(kVllm)));
  EXPECT_EQ((*status)->size, 9'000'000'000u);

  auto list = client.List();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0], **status);
}

TEST_F(ImageClientTest, StatusFindsAnImageByIdAndRepoDigest) {
  fake_->AddPresent(kVllm, 10);
  ImageClient client(socket_);
  auto by_id = client.Status(FakeDigest(kVllm));
  ASSERT_TRUE(by_id.ok()) << by_id.status();
  ASSERT_TRUE(by_id->has_value());
  auto by_digest = client.Status((*by_id)->repo_digests.at(0));
  ASSERT_TRUE(by_digest.ok()) << by_digest.status();
  EXPECT_TRUE(by_digest->has_value());
}

TEST_F(ImageClientTest, EnsureImageDoesNotPullWhatIsPresent) {
  fake_->AddPresent(kVllm, 42);
  ImageClient client(socket_);
  auto ensured = EnsureImage(client, kVllm);
  ASSERT_TRUE(ensured.ok()) << ensured.status();
  EXPECT_FALSE(ensured->pulled);
  EXPECT_EQ(ensured->image.size, 42u);
  EXPECT_EQ(fake_->pull_count(kVllm), 0);
}

TEST_F(ImageClientTest, EnsureImagePullsOnceThenFindsItPresent) {
  ImageClient client(socket_);
  auto first = EnsureImage(client, kVllm);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->pulled);
  EXPECT_EQ(first->image.id, FakeDigest(kVllm));
  EXPECT_EQ(first->image.size, 9'000'000'000u);
  auto second = EnsureImage(client, kVllm);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->pulled);
  EXPECT_EQ(fake_->pull_count(kVllm), 1);
}

TEST_F(ImageClientTest, CredentialsRequiredRejectedAndAccepted) {
  ImageClient client(socket_);
  auto without = client.Pull(kPrivate);
  ASSERT_FALSE(without.ok());
  EXPECT_EQ(without.status().code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(Message(without.status()),
              HasSubstr("pulling " + kPrivate + " through unix://" + socket_ + ": "));
  EXPECT_THAT(Message(without.status()), HasSubstr("no basic auth credentials"));

  auto wrong = client.Pull(kPrivate, RegistryAuth{.username = "alice", .password = "nope"});
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(Message(wrong.status()), HasSubstr("401 Unauthorized"));
  EXPECT_FALSE(fake_->IsPresent(kPrivate));

  // The credentials as the cache agent gets them: from a pull secret.
  auto auth = AuthFor(R"({"auths": {"ghcr.io": {"auth": "YWxpY2U6cHc="}}})", "ghcr.io");
  ASSERT_TRUE(auth.ok()) << auth.status();
  ASSERT_TRUE(auth->has_value());
  auto ensured = EnsureImage(client, kPrivate, *auth);
  ASSERT_TRUE(ensured.ok()) << ensured.status();
  EXPECT_TRUE(ensured->pulled);
  EXPECT_EQ(fake_->pull_count(kPrivate), 3);
}

TEST_F(ImageClientTest, PullFailuresCarryTheRuntimesMessage) {
  fake_->FailPulls(kVllm,
                   "failed to extract layer sha256:1: write /var/lib: no space left on device");
  ImageClient client(socket_);
  auto failed = EnsureImage(client, kVllm);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(Message(failed.status()),
            "pulling " + kVllm + " through unix://" + socket_ +
                ": failed to extract layer sha256:1: write /var/lib: no space left on device");

  auto unknown = client.Pull("docker.io/library/nope:1");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(Message(unknown.status()), HasSubstr("docker.io/library/nope:1: not found"));
}

TEST_F(ImageClientTest, StalledPullIsObservedThenReleased) {
  fake_->StallPulls(kVllm);
  ImageClient client(socket_);
  absl::StatusOr<EnsuredImage> result = absl::UnknownError("not run");
  std::thread puller([&] { result = EnsureImage(client, kVllm); });
  ASSERT_TRUE(fake_->WaitForStalledPulls(kVllm, 1, kGenerous));
  // Mid-pull the image is not there yet, and other calls are still served.
  auto mid = client.Status(kVllm);
  ASSERT_TRUE(mid.ok()) << mid.status();
  EXPECT_FALSE(mid->has_value());
  fake_->ReleasePulls(kVllm);
  puller.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->pulled);
  EXPECT_TRUE(fake_->IsPresent(kVllm));
}

TEST_F(ImageClientTest, CancelPullsEndsPullsInFlight) {
  fake_->StallPulls(kVllm);
  fake_->StallPulls(kPrivate);
  ImageClient client(socket_);
  absl::StatusOr<std::string> first = "not run";
  absl::StatusOr<std::string> second = "not run";
  std::thread a([&] { first = client.Pull(kVllm); });
  std::thread b([&] { second = client.Pull(kPrivate); });
  ASSERT_TRUE(fake_->WaitForStalledPulls(kVllm, 1, kGenerous));
  ASSERT_TRUE(fake_->WaitForStalledPulls(kPrivate, 1, kGenerous));
  client.CancelPulls();
  a.join();
  b.join();
  EXPECT_EQ(first.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(Message(first.status()),
            "pulling " + kVllm + " through unix://" + socket_ + ": cancelled by this node");
  EXPECT_EQ(second.status().code(), absl::StatusCode::kCancelled);
  // The runtime saw its callers go: nothing waits there any more.
  EXPECT_TRUE(fake_->WaitForStalledPulls(kVllm, 0, kGenerous));

  // Later pulls are not affected.
  fake_->ReleasePulls(kVllm);
  EXPECT_TRUE(client.Pull(kVllm).ok());
}

TEST_F(ImageClientTest, PullPastItsDeadline) {
  fake_->StallPulls(kVllm);
  ImageClient client(socket_, ImageClientOptions{.pull_timeout = std::chrono::milliseconds(300)});
  auto pulled = client.Pull(kVllm);
  ASSERT_FALSE(pulled.ok());
  EXPECT_EQ(pulled.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(Message(pulled.status()), "pulling " + kVllm + " through unix://" + socket_ +
                                          ": the runtime gave no answer within 300 ms");
}

TEST_F(ImageClientTest, RuntimeStoppedOrNeverThere) {
  ImageClient client(socket_);
  ASSERT_TRUE(client.List().ok());
  fake_->Stop();
  auto after_stop = client.List();
  ASSERT_FALSE(after_stop.ok());
  EXPECT_EQ(after_stop.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Message(after_stop.status()),
            "no container runtime at unix://" + socket_ + ": the socket does not exist");

  ImageClient nowhere(dir_.path() + "/run/containerd/containerd.sock");
  auto missing = nowhere.Pull(kVllm);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(Message(missing.status()), "no container runtime at unix://" + dir_.path() +
                                           "/run/containerd/containerd.sock: the socket does "
                                           "not exist");
}

TEST_F(ImageClientTest, StaleSocketNobodyListensOn) {
  // What a crashed runtime leaves: the file, bound once, nobody accepting.
  std::string stale = dir_.path() + "/crio.sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, stale.c_str(), stale.size() + 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ::close(fd);
  ImageClient client(stale);
  auto status = client.Status(kVllm);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.status().code(), absl::StatusCode::kUnavailable);
  std::string message = Message(status.status());
  EXPECT_THAT(message, HasSubstr("no container runtime at unix://" + stale + ": "));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("does not exist")));
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST_F(ImageClientTest, RuntimeWithoutTheCallIsUnimplemented) {
  // The generated base class answers UNIMPLEMENTED to every call, as a
  // runtime that lacks a method does.
  std::string other = dir_.path() + "/other.sock";
  runtime::v1::ImageService::Service unimplemented;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + other, grpc::InsecureServerCredentials());
  builder.RegisterService(&unimplemented);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ImageClient client(other);
  auto list = client.List();
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Message(list.status()),
              HasSubstr("does not serve runtime.v1.ImageService/ListImages"));
  server->Shutdown();
}

TEST_F(ImageClientTest, RemoveAndFsInfo) {
  fake_->AddPresent(kVllm, 1000);
  fake_->AddPresent(kPrivate, 24);
  ImageClient client(socket_);
  auto usage = client.FsInfo();
  ASSERT_TRUE(usage.ok()) << usage.status();
  ASSERT_EQ(usage->size(), 1u);
  EXPECT_EQ((*usage)[0].used_bytes, 1024u);
  EXPECT_EQ((*usage)[0].inodes_used, 2u);
  EXPECT_FALSE((*usage)[0].mountpoint.empty());

  ASSERT_TRUE(client.Remove(kVllm).ok());
  EXPECT_FALSE(fake_->IsPresent(kVllm));
  // Idempotent, as the CRI requires.
  EXPECT_TRUE(client.Remove(kVllm).ok());
  auto list = client.List();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, FakeDigest(kPrivate));
}

}  // namespace
}  // namespace canhazgpu::cri
