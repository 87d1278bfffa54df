// A typed Kubernetes client: the REST verbs on any resource, with client-go's
// behaviour — rate limits (5 QPS, burst 10 by default), retries with
// exponential backoff and jitter (idempotent requests on connection errors
// and 5xx, every request on 429 after its Retry-After), one-line errors
// from the API's Status, conflict retries for read-modify-write, paginated
// lists and resumable watches. Credentials come from the RestConfig, or from
// its exec plugin (exec_credentials.h) when it has no token, basic auth or
// client certificate of its own. As in client-go, the plugin's credential is
// kept until it expires and a 401 to a request that carried it runs the
// plugin again; unlike client-go, which leaves that request failed, the
// request is then repeated once. Objects are JSON documents: what is read is
// what is written back, fields we do not model included. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "kube/api_status.h"
#include "kube/exec_credentials.h"
#include "kube/http_transport.h"
#include "kube/kubeconfig.h"
#include "kube/stop_pipe.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kube {

// A resource by its REST coordinates.
struct ResourceRef {
  std::string group;  // "" for core/v1
  std::string version;
  std::string resource;  // plural
  bool namespaced = true;

  // "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims[/name[/sub]]"
  std::string Path(const std::string& ns, const std::string& name = "",
                   const std::string& subresource = "") const;
  // "resourceclaims.resource.k8s.io" (or "pods"), as messages name it.
  std::string Qualified() const;
};

// The resources our programs use.
inline const ResourceRef kPods{"", "v1", "pods", true};
inline const ResourceRef kNodes{"", "v1", "nodes", false};
inline const ResourceRef kNamespaces{"", "v1", "namespaces", false};
inline const ResourceRef kConfigMaps{"", "v1", "configmaps", true};
inline const ResourceRef kSecrets{"", "v1", "secrets", true};
inline const ResourceRef kEvents{"", "v1", "events", true};
inline const ResourceRef kServices{"", "v1", "services", true};
inline const ResourceRef kLeases{"coordination.k8s.io", "v1", "leases", true};
inline const ResourceRef kJobs{"batch", "v1", "jobs", true};
inline const ResourceRef kResourceSlices{"resource.k8s.io", "v1", "resourceslices", false};
inline const ResourceRef kResourceClaims{"resource.k8s.io", "v1", "resourceclaims", true};
inline const ResourceRef kResourceClaimTemplates{"resource.k8s.io", "v1", "resourceclaimtemplates",
                                                 true};
inline const ResourceRef kDeviceClasses{"resource.k8s.io", "v1", "deviceclasses", false};
// The cluster's own gang scheduling (KEP-4671, GenericWorkload): beta in
// 1.37; 1.36 served the same PodGroup as v1alpha2.
inline const ResourceRef kPodGroups{"scheduling.k8s.io", "v1beta1", "podgroups", true};
// Our CRD (deploy/crds): each node's GPUs as its k8shazgpu-node sees them;
// the node driver writes it, the cluster CLI reads it.
inline const ResourceRef kNodeGpuStatuses{"canhazgpu.dev", "v1alpha1", "nodegpustatuses", false};

// "PROGRAM/<version> (linux/<arch>)", as client-go's programs introduce
// themselves; the node daemon says k8shazgpu-node.
std::string UserAgent(std::string_view program);

struct ClientOptions {
  std::string user_agent = UserAgent("k8shazgpu");
  double qps = 5;
  int burst = 10;
  std::chrono::milliseconds timeout{30'000};
  int max_retries = 5;
  std::chrono::milliseconds backoff_base{100};  // doubled per retry, jittered
  std::chrono::milliseconds backoff_cap{5'000};
  ExecOptions exec;  // bounds on an exec plugin's run
  // Sleeps, deadlines, the rate limiter and when an exec credential
  // expires; null: RealClock().
  const Clock* clock = nullptr;
  // Writes ask the server to refuse fields its schema does not know
  // (fieldValidation=Strict, as kubectl does) instead of dropping them
  // silently: what our programs send must be exactly what is stored.
  bool strict_field_validation = true;
};

// Bounds on one call, its retries and rate-limit waits included: no try
// starts, and no wait for the rate limiter or a backoff runs, past
// `deadline`, and each try's timeout is cut to end by it. A call stopped by
// it ends with DeadlineExceeded, saying how many tries it made and what the
// last one got. The caller's deadline (a kubelet's, say) thus bounds the
// call instead of the client's tries times its timeout.
struct CallOptions {
  MonoTime deadline = MonoTime::max();
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;
  std::string continue_token;
  std::string resource_version;
};

enum class PatchType { kMerge, kJson, kStrategic, kApply };

struct PatchOptions {
  std::string field_manager;  // required for kApply
  bool force = false;
  std::string subresource;  // "status"
};

struct DeleteOptions {
  std::string propagation;  // Background, Foreground, Orphan; empty: the server's
  std::string precondition_uid;
  std::string precondition_resource_version;
  // Pods: how long the kubelet has to stop it; 0 removes it now.
  std::optional<int64_t> grace_period_seconds;
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // empty: the current state first, as ADDED
  bool allow_bookmarks = true;
  int timeout_seconds = 0;  // per connection; 0: the server's
  // Ends the watch (OK) within a tenth of a second of turning true.
  const std::atomic<bool>* cancel = nullptr;
  // Ends the watch (OK) as soon as it is stopped, even on a quiet stream.
  const StopPipe* stop = nullptr;
};

struct LogOptions {
  std::string container;  // empty: the pod's only container
  bool follow = false;    // keep streaming until the container ends
  int64_t since_seconds = 0;
  int64_t tail_lines = -1;  // -1: all
  bool timestamps = false;
  // Ends a followed stream (OK) within a tenth of a second of turning true.
  const std::atomic<bool>* cancel = nullptr;
  // Ends a followed stream (OK) as soon as it is stopped.
  const StopPipe* stop = nullptr;
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK
  nlohmann::json object;
};

// The Kubernetes reason of an error this client returned ("NotFound",
// "Conflict", ...), or "" for other errors.
std::string ReasonOf(const absl::Status& status);
inline bool IsApiNotFound(const absl::Status& s) { return ReasonOf(s) == "NotFound"; }
inline bool IsApiAlreadyExists(const absl::Status& s) { return ReasonOf(s) == "AlreadyExists"; }
inline bool IsApiConflict(const absl::Status& s) { return ReasonOf(s) == "Conflict"; }
inline bool IsApiGone(const absl::Status& s) {
  return ReasonOf(s) == "Gone" || ReasonOf(s) == "Expired";
}

class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Create(RestConfig config,
                                                        ClientOptions options = {});

  const RestConfig& config() const { return config_; }
  // What the client sleeps and measures deadlines on; callers waiting
  // beside it (an informer's backoff) use the same.
  const Clock& clock() const { return clock_; }

  absl::StatusOr<nlohmann::json> Get(const ResourceRef& ref, const std::string& ns,
                                     const std::string& name, const CallOptions& call = {});
  // One page.
  absl::StatusOr<nlohmann::json> List(const ResourceRef& ref, const std::string& ns,
                                      const ListOptions& options = {});
  // Every page (options.limit per page), as one list.
  absl::StatusOr<nlohmann::json> ListAll(const ResourceRef& ref, const std::string& ns,
                                         ListOptions options = {});
  // With metadata.generateName and no name, the server picks the name.
  absl::StatusOr<nlohmann::json> CreateObject(const ResourceRef& ref, const std::string& ns,
                                              const nlohmann::json& object);
  // pods/binding: assigns the pod to a node, as a scheduler does.
  absl::Status BindPod(const std::string& ns, const std::string& pod, const std::string& uid,
                       const std::string& node);
  // PUT of `object` (its metadata.name and resourceVersion).
  absl::StatusOr<nlohmann::json> Update(const ResourceRef& ref, const std::string& ns,
                                        const nlohmann::json& object);
  absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& ref, const std::string& ns,
                                              const nlohmann::json& object);
  absl::StatusOr<nlohmann::json> Patch(const ResourceRef& ref, const std::string& ns,
                                       const std::string& name, PatchType type,
                                       const nlohmann::json& patch,
                                       const PatchOptions& options = {});
  absl::Status Delete(const ResourceRef& ref, const std::string& ns, const std::string& name,
                      const DeleteOptions& options = {});
  // Deletes every object the selectors match (deletecollection) and
  // returns the list of what was deleted.
  absl::StatusOr<nlohmann::json> DeleteCollection(const ResourceRef& ref, const std::string& ns,
                                                  const ListOptions& selectors,
                                                  const DeleteOptions& options = {});
  // Reads the object, lets `mutate` change it, writes it with the read
  // version; on 409 Conflict reads again and repeats (up to `attempts`).
  absl::StatusOr<nlohmann::json> ReadModifyWrite(
      const ResourceRef& ref, const std::string& ns, const std::string& name,
      const std::function<absl::Status(nlohmann::json&)>& mutate, int attempts = 5);

  // OK when the server serves resource.k8s.io/v1 (Kubernetes 1.34 or newer);
  // otherwise FailedPrecondition in one line naming the server and the
  // versions it does serve.
  absl::Status CheckDraApi();
  // Whether the server serves `ref` (its group-version's discovery lists
  // the resource): false on a 404, an error when the server cannot say.
  absl::StatusOr<bool> Serves(const ResourceRef& ref);

  // Streams events to `handler` until it returns false (then OK). When the
  // server ends a connection, the watch resumes from the last version seen
  // (bookmarks included). A version the server no longer has ends it with
  // an error for which IsApiGone() holds: the caller lists again (Informer
  // does).
  absl::Status Watch(const ResourceRef& ref, const std::string& ns, const WatchOptions& options,
                     const std::function<bool(const WatchEvent&)>& handler);

  // pods/log: the container's output so far (options.follow is ignored).
  absl::StatusOr<std::string> Logs(const std::string& ns, const std::string& pod,
                                   const LogOptions& options = {});
  // pods/log streamed: `on_data` gets the output as it arrives, until the
  // server ends it (with follow: when the container ends), `on_data`
  // returns false, or options.cancel turns true or options.stop is stopped
  // — all OK.
  absl::Status StreamLogs(const std::string& ns, const std::string& pod, const LogOptions& options,
                          const std::function<bool(std::string_view)>& on_data);

 private:
  Client(RestConfig config, ClientOptions options, std::unique_ptr<HttpTransport> transport,
         std::unique_ptr<ExecAuthenticator> exec);

  // One request with rate limiting, credentials and retries; a non-2xx
  // response becomes the API's error naming `verb` and the object.
  absl::StatusOr<nlohmann::json> Call(const std::string& verb, const ResourceRef& ref,
                                      const std::string& ns, const std::string& name,
                                      HttpRequest request, const CallOptions& call = {});
  // Sets the request's Authorization header (and client certificate) and
  // returns the exec plugin's credential it carries, or null.
  absl::StatusOr<std::shared_ptr<const ExecCredential>> AddCredentials(HttpRequest& request);
  // "?fieldValidation=Strict" for writes, unless the options say otherwise.
  std::string WriteQuery() const;
  // True after a 401 to a request that carried the exec plugin's
  // credential, the first time for this request: the credential was revoked
  // or replaced before its expiry, so it is dropped and the caller asks the
  // plugin again and retries once.
  bool ForgetRefused(int code, const std::shared_ptr<const ExecCredential>& plugin,
                     bool& reauthenticated);
  // Takes a token from the rate limiter, waiting for one unless it would
  // come after `deadline`: false then, and no token is taken.
  bool WaitForToken(MonoTime deadline);
  std::chrono::milliseconds Backoff(int attempt);

  RestConfig config_;
  ClientOptions options_;
  std::unique_ptr<HttpTransport> transport_;
  std::unique_ptr<ExecAuthenticator> exec_;  // null when the config's own credentials are used
  Mutex mu_;                                 // the rate limiter and the token file cache
  double tokens_ ABSL_GUARDED_BY(mu_);
  const Clock& clock_;
  MonoTime refilled_ ABSL_GUARDED_BY(mu_);
  std::string file_token_ ABSL_GUARDED_BY(mu_);
  std::array<int64_t, 3> file_token_stamp_ ABSL_GUARDED_BY(mu_) = {-1, -1,
                                                                   -1};  // mtime, size, inode
};

// The error for a failed request: "cannot VERB RESOURCE "NAME" in namespace
// NS: REASON: MESSAGE", with the absl code matching the HTTP status and the
// reason attached (ReasonOf).
absl::Status ApiError(const std::string& verb, const ResourceRef& ref, const std::string& ns,
                      const std::string& name, const ApiStatus& status);

}  // namespace canhazgpu::kube
