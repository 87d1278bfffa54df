#include "cri/testing/fake_image_service.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/escaping.h"
#include "core/strings.h"
#include "cri/api.grpc.pb.h"
#include "grpc/support/time.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"

namespace canhazgpu::cri::testing {
namespace {

namespace v1 = runtime::v1;

// How often a stalled pull looks whether its caller gave up; only bounds
// how late a cancelled pull notices, no test waits on it.
constexpr std::chrono::milliseconds kCancelPoll{20};

// Where containerd keeps its images, for ImageFsInfo.
constexpr const char* kImageFsMountpoint =
    "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs";

// "registry/repo:tag" -> "registry/repo" (a port's colon is before the
// last slash); "repo@sha256:…" -> "repo".
std::string RepoOf(const std::string& reference) {
  std::string repo = reference.substr(0, reference.find('@'));
  std::size_t colon = repo.rfind(':');
  std::size_t slash = repo.rfind('/');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    repo.resize(colon);
  }
  return repo;
}

std::string RepoDigestOf(const std::string& reference) {
  return StrCat(RepoOf(reference), "@", FakeDigest(reference));
}

grpc::Status PullRefused(const std::string& reference, std::string_view why) {
  return grpc::Status(grpc::StatusCode::UNKNOWN,
                      StrCat("failed to pull and unpack image \"", reference,
                             "\": failed to resolve reference \"", reference, "\": ", why));
}

// Whether a pull's AuthConfig carries `want`'s credentials, either as
// username and password or as base64 "user:password" in `auth`.
bool CredentialsMatch(const v1::AuthConfig& auth, const RegistryImage& want) {
  std::string username = auth.username();
  std::string password = auth.password();
  if (!auth.auth().empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(auth.auth(), &decoded) || decoded.find(':') == std::string::npos) {
      return false;
    }
    username = decoded.substr(0, decoded.find(':'));
    password = decoded.substr(decoded.find(':') + 1);
  }
  return username == want.username.value_or("") && password == want.password.value_or("");
}

}  // namespace

std::string FakeDigest(const std::string& reference) {
  // Four FNV-1a hashes with different seeds: deterministic, spread, and
  // needing no crypto library. Not a real content digest.
  std::string hex;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    uint64_t hash = 14695981039346656037ULL ^ (seed * 0x9E3779B97F4A7C15ULL);
    for (unsigned char c : reference) {
      hash = (hash ^ c) * 1099511628211ULL;
    }
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(hash));
    hex += buf;
  }
  return "sha256:" + hex;
}

class FakeImageService::Service final : public v1::ImageService::Service {
 public:
  explicit Service(FakeImageService& fake) : fake_(fake) {}

  grpc::Status ListImages(grpc::ServerContext*, const v1::ListImagesRequest* request,
                          v1::ListImagesResponse* response) override {
    MutexLock lock(fake_.mu_);
    const std::string& filter = request->filter().image().image();
    for (const auto& [reference, image] : fake_.present_) {
      if (filter.empty() || fake_.FindLocked(filter) == &image) {
        Fill(image, response->add_images());
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status ImageStatus(grpc::ServerContext*, const v1::ImageStatusRequest* request,
                           v1::ImageStatusResponse* response) override {
    MutexLock lock(fake_.mu_);
    if (const PresentImage* image = fake_.FindLocked(request->image().image())) {
      Fill(*image, response->mutable_image());
    }
    return grpc::Status::OK;
  }

  grpc::Status PullImage(grpc::ServerContext* context, const v1::PullImageRequest* request,
                         v1::PullImageResponse* response) override {
    const std::string& reference = request->image().image();
    MutexLock lock(fake_.mu_);
    ++fake_.pulls_[reference];
    if (fake_.stalling_.contains(reference)) {
      ++fake_.stalled_now_[reference];
      fake_.changed_.notify_all();
      while (fake_.stalling_.contains(reference) && !fake_.stopping_ && !context->IsCancelled()) {
        fake_.changed_.wait_for(lock, kCancelPoll);
      }
      --fake_.stalled_now_[reference];
      fake_.changed_.notify_all();
      if (fake_.stopping_) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the runtime is shutting down");
      }
      if (context->IsCancelled()) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "pull cancelled by the caller");
      }
    }
    if (auto failure = fake_.failures_.find(reference); failure != fake_.failures_.end()) {
      return grpc::Status(grpc::StatusCode::UNKNOWN, failure->second);
    }
    auto found = fake_.registry_.find(reference);
    if (found == fake_.registry_.end()) {
      return PullRefused(reference, StrCat(reference, ": not found"));
    }
    const RegistryImage& image = found->second;
    if (image.username.has_value()) {
      const v1::AuthConfig& auth = request->auth();
      if (auth.username().empty() && auth.auth().empty()) {
        return PullRefused(reference,
                           "pull access denied, repository does not exist or may require "
                           "authorization: authorization failed: no basic auth credentials");
      }
      if (!CredentialsMatch(auth, image)) {
        return PullRefused(reference, StrCat("unexpected status from HEAD request to https://",
                                             RepoOf(reference), ": 401 Unauthorized"));
      }
    }
    fake_.present_[reference] = PresentImage{.reference = reference, .size = image.size};
    fake_.changed_.notify_all();
    response->set_image_ref(FakeDigest(reference));
    return grpc::Status::OK;
  }

  grpc::Status RemoveImage(grpc::ServerContext*, const v1::RemoveImageRequest* request,
                           v1::RemoveImageResponse*) override {
    MutexLock lock(fake_.mu_);
    if (const PresentImage* image = fake_.FindLocked(request->image().image())) {
      fake_.present_.erase(image->reference);
    }
    return grpc::Status::OK;
  }

  grpc::Status ImageFsInfo(grpc::ServerContext*, const v1::ImageFsInfoRequest*,
                           v1::ImageFsInfoResponse* response) override {
    MutexLock lock(fake_.mu_);
    uint64_t used = 0;
    for (const auto& [reference, image] : fake_.present_) {
      used += image.size;
    }
    v1::FilesystemUsage* fs = response->add_image_filesystems();
    fs->mutable_fs_id()->set_mountpoint(kImageFsMountpoint);
    fs->mutable_used_bytes()->set_value(used);
    fs->mutable_inodes_used()->set_value(fake_.present_.size());
    return grpc::Status::OK;
  }

 private:
  static void Fill(const PresentImage& image, v1::Image* out) {
    out->set_id(FakeDigest(image.reference));
    out->add_repo_tags(image.reference);
    out->add_repo_digests(RepoDigestOf(image.reference));
    out->set_size(image.size);
  }

  FakeImageService& fake_;
};

absl::StatusOr<std::unique_ptr<FakeImageService>> FakeImageService::Start(
    const std::string& socket_path) {
  // A socket left by an earlier run would make bind fail.
  struct stat info;
  if (::lstat(socket_path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode)) {
    ::unlink(socket_path.c_str());
  }
  std::unique_ptr<FakeImageService> fake(new FakeImageService());
  fake->socket_path_ = socket_path;
  fake->service_ = std::make_unique<Service>(*fake);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  builder.RegisterService(fake->service_.get());
  fake->server_ = builder.BuildAndStart();
  if (fake->server_ == nullptr) {
    return absl::UnavailableError(StrCat("cannot listen on unix socket ", socket_path));
  }
  return fake;
}

FakeImageService::~FakeImageService() { Stop(); }

void FakeImageService::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
    changed_.notify_all();
  }
  // No grace: calls in flight are cancelled at once, as when a runtime is
  // killed (stalled pulls have just been woken by stopping_). A grace
  // period would also be waited out in full while a client keeps an idle
  // connection open.
  server_->Shutdown(gpr_now(GPR_CLOCK_MONOTONIC));
  server_->Wait();
  ::unlink(socket_path_.c_str());
}

void FakeImageService::AddToRegistry(const std::string& reference, RegistryImage image) {
  MutexLock lock(mu_);
  registry_[reference] = std::move(image);
}

void FakeImageService::AddPresent(const std::string& reference, uint64_t size) {
  MutexLock lock(mu_);
  present_[reference] = PresentImage{.reference = reference, .size = size};
}

void FakeImageService::FailPulls(const std::string& reference, std::string message) {
  MutexLock lock(mu_);
  failures_[reference] = std::move(message);
}

void FakeImageService::ClearFailure(const std::string& reference) {
  MutexLock lock(mu_);
  failures_.erase(reference);
}

void FakeImageService::StallPulls(const std::string& reference) {
  MutexLock lock(mu_);
  stalling_.insert(reference);
}

void FakeImageService::ReleasePulls(const std::string& reference) {
  MutexLock lock(mu_);
  stalling_.erase(reference);
  changed_.notify_all();
}

bool FakeImageService::WaitForStalledPulls(const std::string& reference, int count,
                                           std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return changed_.wait_for(lock, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = stalled_now_.find(reference);
    return (it == stalled_now_.end() ? 0 : it->second) == count;
  });
}

int FakeImageService::pull_count(const std::string& reference) const {
  MutexLock lock(mu_);
  auto it = pulls_.find(reference);
  return it == pulls_.end() ? 0 : it->second;
}

bool FakeImageService::IsPresent(const std::string& reference) const {
  MutexLock lock(mu_);
  return FindLocked(reference) != nullptr;
}

const FakeImageService::PresentImage* FakeImageService::FindLocked(const std::string& name) const {
  if (auto it = present_.find(name); it != present_.end()) {
    return &it->second;
  }
  for (const auto& [reference, image] : present_) {
    if (FakeDigest(reference) == name || RepoDigestOf(reference) == name) {
      return &image;
    }
  }
  return nullptr;
}

}  // namespace canhazgpu::cri::testing
