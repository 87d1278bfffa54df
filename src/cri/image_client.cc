#include "cri/image_client.h"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "core/strings.h"
#include "cri/api.grpc.pb.h"
#include "grpc/support/time.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace canhazgpu::cri {
namespace {

using std::chrono::milliseconds;

// Measured on gRPC's monotonic clock, so a wall-clock jump cannot stretch
// or cut a deadline (the daemon's grpc_deadline.h does the same; cri sits
// below the daemon and does not depend on it).
void SetDeadline(grpc::ClientContext& context, milliseconds timeout) {
  context.set_deadline(gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                    gpr_time_from_millis(timeout.count(), GPR_TIMESPAN)));
}

std::string Seconds(milliseconds timeout) {
  if (timeout.count() % 1000 == 0) {
    return StrCat(timeout.count() / 1000, " s");
  }
  return StrCat(timeout.count(), " ms");
}

// gRPC's transport errors can span lines (a failed connect lists every
// address it tried); ours are one line.
std::string OneLine(const grpc::Status& status) {
  std::string message = status.error_message();
  std::replace(message.begin(), message.end(), '\n', ' ');
  std::string_view trimmed = Trim(message);
  return trimmed.empty() ? "no message" : std::string(trimmed);
}

bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

ImageInfo FromProto(const runtime::v1::Image& image) {
  return ImageInfo{
      .id = image.id(),
      .repo_tags = {image.repo_tags().begin(), image.repo_tags().end()},
      .repo_digests = {image.repo_digests().begin(), image.repo_digests().end()},
      .size = image.size(),
  };
}

}  // namespace

class ImageClient::Stub {
 public:
  Stub(std::string path, std::string endpoint)
      : path_(std::move(path)),
        endpoint_(std::move(endpoint)),
        stub_(runtime::v1::ImageService::NewStub(
            grpc::CreateChannel("unix:" + path_, grpc::InsecureChannelCredentials()))) {}

  runtime::v1::ImageService::Stub& operator*() { return *stub_; }

  // `what` names the call for the message: "pulling nginx:1.27",
  // "ImageStatus of nginx:1.27".
  absl::Status Error(const grpc::Status& status, std::string_view what, milliseconds timeout,
                     std::string_view method) const {
    auto code = static_cast<absl::StatusCode>(status.error_code());
    switch (status.error_code()) {
      case grpc::StatusCode::OK:
        return absl::OkStatus();
      case grpc::StatusCode::UNAVAILABLE:
        return absl::UnavailableError(
            StrCat("no container runtime at ", endpoint_, ": ",
                   Exists(path_) ? OneLine(status) : "the socket does not exist"));
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        return absl::DeadlineExceededError(StrCat(what, " through ", endpoint_,
                                                  ": the runtime gave no answer within ",
                                                  Seconds(timeout)));
      case grpc::StatusCode::UNIMPLEMENTED:
        return absl::UnimplementedError(
            StrCat("the runtime at ", endpoint_, " does not serve runtime.v1.ImageService/", method,
                   " (a runtime older than CRI v1?): ", OneLine(status)));
      default:
        return absl::Status(code, StrCat(what, " through ", endpoint_, ": ", OneLine(status)));
    }
  }

 private:
  std::string path_;
  std::string endpoint_;
  std::unique_ptr<runtime::v1::ImageService::Stub> stub_;
};

ImageClient::ImageClient(std::string socket_path, ImageClientOptions options)
    : endpoint_("unix://" + socket_path),
      options_(options),
      stub_(std::make_unique<Stub>(std::move(socket_path), endpoint_)) {}

ImageClient::~ImageClient() = default;

absl::StatusOr<std::string> ImageClient::Pull(const std::string& image,
                                              const std::optional<RegistryAuth>& auth) {
  runtime::v1::PullImageRequest request;
  request.mutable_image()->set_image(image);
  if (auth.has_value()) {
    runtime::v1::AuthConfig* config = request.mutable_auth();
    config->set_username(auth->username);
    config->set_password(auth->password);
    config->set_server_address(auth->server_address);
    config->set_identity_token(auth->identity_token);
    config->set_registry_token(auth->registry_token);
  }
  runtime::v1::PullImageResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.pull_timeout);
  {
    MutexLock lock(mu_);
    pulls_.insert(&context);
  }
  grpc::Status status = (**stub_).PullImage(&context, request, &response);
  bool cancelled;
  {
    MutexLock lock(mu_);
    // CancelPulls erases what it cancels, so a missing entry is ours.
    cancelled = pulls_.erase(&context) == 0;
  }
  if (cancelled && status.error_code() == grpc::StatusCode::CANCELLED) {
    return absl::CancelledError(
        StrCat("pulling ", image, " through ", endpoint_, ": cancelled by this node"));
  }
  if (!status.ok()) {
    return stub_->Error(status, StrCat("pulling ", image), options_.pull_timeout, "PullImage");
  }
  if (response.image_ref().empty()) {
    return absl::InternalError(StrCat("pulling ", image, " through ", endpoint_,
                                      ": the runtime answered without an image reference"));
  }
  return response.image_ref();
}

absl::StatusOr<std::optional<ImageInfo>> ImageClient::Status(const std::string& image) {
  runtime::v1::ImageStatusRequest request;
  request.mutable_image()->set_image(image);
  runtime::v1::ImageStatusResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.call_timeout);
  grpc::Status status = (**stub_).ImageStatus(&context, request, &response);
  if (!status.ok()) {
    return stub_->Error(status, StrCat("ImageStatus of ", image), options_.call_timeout,
                        "ImageStatus");
  }
  // An absent image is an unset field, or (some runtimes) an empty one.
  if (!response.has_image() || response.image().id().empty()) {
    return std::nullopt;
  }
  return FromProto(response.image());
}

absl::StatusOr<std::vector<ImageInfo>> ImageClient::List() {
  runtime::v1::ListImagesResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.call_timeout);
  grpc::Status status = (**stub_).ListImages(&context, runtime::v1::ListImagesRequest(), &response);
  if (!status.ok()) {
    return stub_->Error(status, "ListImages", options_.call_timeout, "ListImages");
  }
  std::vector<ImageInfo> images;
  images.reserve(response.images_size());
  for (const runtime::v1::Image& image : response.images()) {
    images.push_back(FromProto(image));
  }
  return images;
}

absl::Status ImageClient::Remove(const std::string& image) {
  runtime::v1::RemoveImageRequest request;
  request.mutable_image()->set_image(image);
  runtime::v1::RemoveImageResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.call_timeout);
  return stub_->Error((**stub_).RemoveImage(&context, request, &response),
                      StrCat("removing ", image), options_.call_timeout, "RemoveImage");
}

absl::StatusOr<std::vector<ImageFsUsage>> ImageClient::FsInfo() {
  runtime::v1::ImageFsInfoResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.call_timeout);
  grpc::Status status =
      (**stub_).ImageFsInfo(&context, runtime::v1::ImageFsInfoRequest(), &response);
  if (!status.ok()) {
    return stub_->Error(status, "ImageFsInfo", options_.call_timeout, "ImageFsInfo");
  }
  std::vector<ImageFsUsage> usage;
  for (const runtime::v1::FilesystemUsage& fs : response.image_filesystems()) {
    usage.push_back(ImageFsUsage{
        .mountpoint = fs.fs_id().mountpoint(),
        .used_bytes = fs.used_bytes().value(),
        .inodes_used = fs.inodes_used().value(),
    });
  }
  return usage;
}

void ImageClient::CancelPulls() {
  MutexLock lock(mu_);
  for (grpc::ClientContext* context : pulls_) {
    context->TryCancel();
  }
  pulls_.clear();
}

}  // namespace canhazgpu::cri
