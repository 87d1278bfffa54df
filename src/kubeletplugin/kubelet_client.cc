#include "kubeletplugin/kubelet_client.h"

#include <algorithm>
#include <utility>

#include "core/status_macros.h"
#include "core/strings.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "kubelet/pluginregistration.grpc.pb.h"
#include "kubeletplugin/dra_codec.h"
#include "kubeletplugin/dra_versions.h"
#include "kubeletplugin/grpc_deadline.h"
#include "kubeletplugin/grpc_status.h"

namespace canhazgpu::kubeletplugin {

using std::chrono::milliseconds;

// The calls of one DRAPlugin version. Virtual, so that the client picks a
// version at run time while the templates keep one implementation.
class KubeletClient::DraCaller {
 public:
  virtual ~DraCaller() = default;
  virtual absl::StatusOr<std::map<std::string, driver::PrepareResult>> Prepare(
      const std::vector<driver::ClaimRef>& claims, milliseconds timeout) = 0;
  virtual absl::StatusOr<std::map<std::string, std::string>> Unprepare(
      const std::vector<driver::ClaimRef>& claims, milliseconds timeout) = 0;
};

namespace {

// A channel to a plugin's socket on this node. gRPC waits a second before
// its first reconnect, and a socket often appears (the kubelet sees it)
// before its plugin listens on it: a dial would lose that second each
// time. Locally a refused connect costs nothing, so tries start 10 ms apart
// (doubling, as gRPC's backoff does, up to a second).
std::shared_ptr<grpc::Channel> LocalChannel(const std::string& socket) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 10);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 10);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
}

template <typename Api>
class DraCallerFor final : public KubeletClient::DraCaller {
 public:
  DraCallerFor(std::shared_ptr<grpc::Channel> channel, std::string endpoint)
      : stub_(Api::DRAPlugin::NewStub(channel)), endpoint_(std::move(endpoint)) {}

  absl::StatusOr<std::map<std::string, driver::PrepareResult>> Prepare(
      const std::vector<driver::ClaimRef>& claims, milliseconds timeout) override {
    typename Api::PrepareRequest request;
    EncodeClaims(claims, &request);
    typename Api::PrepareResponse response;
    grpc::ClientContext context;
    context.set_deadline(DeadlineAfter(timeout));
    RETURN_IF_ERROR(FromGrpcStatus(stub_->NodePrepareResources(&context, request, &response),
                                   StrCat("NodePrepareResources on ", endpoint_)));
    return DecodePrepareResults(response);
  }

  absl::StatusOr<std::map<std::string, std::string>> Unprepare(
      const std::vector<driver::ClaimRef>& claims, milliseconds timeout) override {
    typename Api::UnprepareRequest request;
    EncodeClaims(claims, &request);
    typename Api::UnprepareResponse response;
    grpc::ClientContext context;
    context.set_deadline(DeadlineAfter(timeout));
    RETURN_IF_ERROR(FromGrpcStatus(stub_->NodeUnprepareResources(&context, request, &response),
                                   StrCat("NodeUnprepareResources on ", endpoint_)));
    return DecodeUnprepareResults(response);
  }

 private:
  std::unique_ptr<typename Api::DRAPlugin::Stub> stub_;
  std::string endpoint_;
};

std::unique_ptr<KubeletClient::DraCaller> MakeDraCaller(std::string_view service,
                                                        std::shared_ptr<grpc::Channel> channel,
                                                        const std::string& endpoint) {
  if (service == DraV1::kService) {
    return std::make_unique<DraCallerFor<DraV1>>(std::move(channel), endpoint);
  }
  return std::make_unique<DraCallerFor<DraV1beta1>>(std::move(channel), endpoint);
}

// One NodeWatchResources stream; `stopped` tells whether we ended it.
template <typename Api>
grpc::Status WatchWith(const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext& context,
                       const KubeletClient::HealthUpdate& on_update, bool& stopped) {
  auto stub = Api::DRAResourceHealth::NewStub(channel);
  auto reader = stub->NodeWatchResources(&context, typename Api::WatchRequest());
  typename Api::WatchResponse response;
  while (reader->Read(&response)) {
    if (!on_update(DecodeHealth(response))) {
      stopped = true;
      context.TryCancel();
      break;
    }
  }
  return reader->Finish();
}

// The first entry of the plugin's list that the kubelet speaks: the loop
// runs over the plugin's list, as the kubelet's does, so the plugin's order
// decides. "" when none.
std::string FirstSupported(const std::vector<std::string>& offered,
                           const std::vector<std::string>& supported) {
  for (const std::string& version : offered) {
    if (std::find(supported.begin(), supported.end(), version) != supported.end()) {
      return version;
    }
  }
  return "";
}

// The kubelet's ValidatePlugin: why it refuses `info`, "" if it does not.
std::string RefusalReason(const PluginInfo& info, const KubeletClientOptions& options) {
  if (info.type != kPluginType) {
    return StrCat("plugin type \"", info.type, "\" is not ", kPluginType);
  }
  if (info.name.empty()) {
    return "plugin has an empty driver name";
  }
  if (FirstSupported(info.supported_versions, options.dra_services).empty()) {
    return StrCat("plugin ", info.name, ": none of its versions [",
                  Join(info.supported_versions, ", "), "] is supported by this kubelet (",
                  Join(options.dra_services, ", "), ")");
  }
  return "";
}

absl::StatusOr<PluginInfo> GetInfo(pluginregistration::Registration::Stub& stub,
                                   const std::string& socket, milliseconds timeout) {
  grpc::ClientContext context;
  context.set_deadline(DeadlineAfter(timeout));
  pluginregistration::PluginInfo info;
  RETURN_IF_ERROR(FromGrpcStatus(stub.GetInfo(&context, pluginregistration::InfoRequest(), &info),
                                 StrCat("GetInfo on ", socket)));
  return PluginInfo{
      .type = info.type(),
      .name = info.name(),
      .endpoint = info.endpoint(),
      .supported_versions = {info.supported_versions().begin(), info.supported_versions().end()},
  };
}

absl::Status NotifyRegistrationStatus(pluginregistration::Registration::Stub& stub,
                                      const std::string& socket, const std::string& error,
                                      milliseconds timeout) {
  grpc::ClientContext context;
  context.set_deadline(DeadlineAfter(timeout));
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(error.empty());
  status.set_error(error);
  pluginregistration::RegistrationStatusResponse response;
  return FromGrpcStatus(stub.NotifyRegistrationStatus(&context, status, &response),
                        StrCat("NotifyRegistrationStatus on ", socket));
}

}  // namespace

absl::StatusOr<std::unique_ptr<KubeletClient>> KubeletClient::Register(
    const std::string& registration_socket, KubeletClientOptions options) {
  auto channel = LocalChannel(registration_socket);
  // A blocking dial, as the kubelet's: the socket may appear before the
  // plugin accepts on it.
  if (!channel->WaitForConnected(DeadlineAfter(options.dial_timeout))) {
    return absl::UnavailableError(StrCat("cannot connect to registration socket ",
                                         registration_socket, " within ",
                                         options.dial_timeout.count(), " ms"));
  }
  auto registration = pluginregistration::Registration::NewStub(channel);
  ASSIGN_OR_RETURN(PluginInfo info,
                   GetInfo(*registration, registration_socket, options.get_info_timeout));
  if (std::string reason = RefusalReason(info, options); !reason.empty()) {
    // The plugin learns why; a failure to tell it changes nothing.
    NotifyRegistrationStatus(*registration, registration_socket, reason, options.notify_timeout)
        .IgnoreError();
    return absl::FailedPreconditionError(reason);
  }
  std::unique_ptr<KubeletClient> client(new KubeletClient());
  client->service_ = FirstSupported(info.supported_versions, options.dra_services);
  client->health_service_ = FirstSupported(info.supported_versions, options.health_services);
  // An empty endpoint means the registration socket serves DRA as well.
  std::string endpoint = info.endpoint.empty() ? registration_socket : info.endpoint;
  // Like the kubelet's, this connection is made lazily, on the first call.
  client->channel_ = LocalChannel(endpoint);
  client->dra_ = MakeDraCaller(client->service_, client->channel_, endpoint);
  client->plugin_ = std::move(info);
  client->options_ = std::move(options);
  RETURN_IF_ERROR(NotifyRegistrationStatus(*registration, registration_socket, "",
                                           client->options_.notify_timeout));
  return client;
}

KubeletClient::~KubeletClient() = default;

absl::StatusOr<std::map<std::string, driver::PrepareResult>> KubeletClient::NodePrepareResources(
    const std::vector<driver::ClaimRef>& claims) {
  return dra_->Prepare(claims, options_.call_timeout);
}

absl::StatusOr<std::map<std::string, std::string>> KubeletClient::NodeUnprepareResources(
    const std::vector<driver::ClaimRef>& claims) {
  return dra_->Unprepare(claims, options_.call_timeout);
}

absl::Status KubeletClient::WatchResources(const HealthUpdate& on_update) {
  if (health_service_.empty()) {
    return absl::FailedPreconditionError(
        StrCat("plugin ", plugin_.name, " offers no health service this kubelet speaks"));
  }
  grpc::ClientContext context;
  {
    MutexLock lock(mu_);
    watches_.insert(&context);
  }
  bool stopped = false;
  grpc::Status status = health_service_ == HealthV1::kService
                            ? WatchWith<HealthV1>(channel_, context, on_update, stopped)
                            : WatchWith<HealthV1alpha1>(channel_, context, on_update, stopped);
  {
    MutexLock lock(mu_);
    stopped = watches_.erase(&context) == 0 || stopped;
  }
  if (stopped && status.error_code() == grpc::StatusCode::CANCELLED) {
    return absl::OkStatus();
  }
  return FromGrpcStatus(status, StrCat("NodeWatchResources on ", plugin_.endpoint));
}

void KubeletClient::CancelWatches() {
  MutexLock lock(mu_);
  for (grpc::ClientContext* context : watches_) {
    context->TryCancel();
  }
  // Erased here so that each watch knows it was cancelled by us.
  watches_.clear();
}

}  // namespace canhazgpu::kubeletplugin
