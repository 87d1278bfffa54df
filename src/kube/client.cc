#include "kube/client.h"

#include <sys/stat.h>

#include <array>
#include <random>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "core/file_read.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::kube {
namespace {

using nlohmann::json;

constexpr char kReasonPayload[] = "type.googleapis.com/canhazgpu.kube.Reason";

std::string Escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

std::string Query(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    if (v.empty()) continue;
    out += StrCat(out.empty() ? "?" : "&", k, "=", Escape(v));
  }
  return out;
}

absl::StatusCode CodeFor(int http) {
  switch (http) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kOutOfRange;
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    case 503:
      return absl::StatusCode::kUnavailable;
    default:
      return http >= 500 ? absl::StatusCode::kInternal : absl::StatusCode::kUnknown;
  }
}

std::string DefaultReason(int http) {
  switch (http) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 504:
      return "Timeout";
    case 503:
      return "ServiceUnavailable";
    default:
      return http >= 500 ? "InternalError" : "Unknown";
  }
}

// "AlreadyExists" -> "already exists".
std::string Words(const std::string& reason) {
  std::string out;
  for (char c : reason) {
    if (absl::ascii_isupper(static_cast<unsigned char>(c)) && !out.empty()) out += ' ';
    out += absl::ascii_tolower(static_cast<unsigned char>(c));
  }
  return out;
}

bool Idempotent(const std::string& method) {
  return method == "GET" || method == "PUT" || method == "DELETE" || method == "HEAD";
}

const char* ContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategic:
      return "application/strategic-merge-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "";
}

// A 2xx reply's body: {} when empty.
absl::StatusOr<json> SuccessBody(const std::string& body, const std::string& verb,
                                 const ResourceRef& ref) {
  if (body.empty()) return json::object();
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InternalError(
        StrCat("cannot ", verb, " ", ref.Qualified(), ": the server's reply is not JSON"));
  }
  return parsed;
}

// How long to wait before trying again after a 429 or 5xx: the server's
// Retry-After (at most a minute), else `backoff`.
std::chrono::milliseconds RetryWait(const HttpResponse& response,
                                    std::chrono::milliseconds backoff) {
  if (auto it = response.headers.find("retry-after"); it != response.headers.end()) {
    const int seconds = std::atoi(it->second.c_str());
    if (seconds > 0) return std::chrono::seconds(std::min(seconds, 60));
  }
  return backoff;
}

// The path of a watch that resumes from `version`.
std::string WatchPath(const ResourceRef& ref, const std::string& ns, const WatchOptions& options,
                      const std::string& version) {
  return ref.Path(ns) +
         Query({{"watch", "true"},
                {"labelSelector", options.label_selector},
                {"fieldSelector", options.field_selector},
                {"resourceVersion", version},
                {"allowWatchBookmarks", options.allow_bookmarks ? "true" : ""},
                {"timeoutSeconds",
                 options.timeout_seconds > 0 ? std::to_string(options.timeout_seconds) : ""}});
}

// Whether the caller asked a watch or log stream to end.
bool StreamEnded(const std::atomic<bool>* cancel, const StopPipe* stop) {
  return (cancel != nullptr && cancel->load()) || (stop != nullptr && stop->stopped());
}

std::string NameOf(const json& object) {
  return object.is_object() ? object.value("/metadata/name"_json_pointer, std::string()) : "";
}

}  // namespace

std::string ResourceRef::Path(const std::string& ns, const std::string& name,
                              const std::string& subresource) const {
  std::string path =
      group.empty() ? StrCat("/api/", version) : StrCat("/apis/", group, "/", version);
  if (namespaced && !ns.empty()) path += StrCat("/namespaces/", Escape(ns));
  path += "/" + resource;
  if (!name.empty()) path += "/" + Escape(name);
  if (!subresource.empty()) path += "/" + subresource;
  return path;
}

std::string ResourceRef::Qualified() const {
  return group.empty() ? resource : StrCat(resource, ".", group);
}

std::string ReasonOf(const absl::Status& status) {
  auto reason = status.GetPayload(kReasonPayload);
  return reason ? std::string(*reason) : std::string();
}

absl::Status ApiError(const std::string& verb, const ResourceRef& ref, const std::string& ns,
                      const std::string& name, const ApiStatus& api) {
  const std::string reason = api.reason.empty() ? DefaultReason(api.code) : api.reason;
  std::string message = StrCat("cannot ", verb, " ", ref.Qualified());
  if (!name.empty()) message += StrCat(" \"", name, "\"");
  if (ref.namespaced && !ns.empty()) message += StrCat(" in namespace ", ns);
  message += StrCat(": ", Words(reason));
  if (!api.message.empty()) message += ": " + api.message;
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';  // one line
  }
  absl::Status status(CodeFor(api.code), message);
  status.SetPayload(kReasonPayload, absl::Cord(reason));
  return status;
}

std::string UserAgent(std::string_view program) {
#if defined(__x86_64__)
  constexpr char kArch[] = "amd64";
#elif defined(__aarch64__)
  constexpr char kArch[] = "arm64";
#else
  constexpr char kArch[] = "unknown";
#endif
  return StrCat(program, "/", CANHAZGPU_VERSION, " (linux/", kArch, ")");
}

Client::Client(RestConfig config, ClientOptions options, std::unique_ptr<HttpTransport> transport,
               std::unique_ptr<ExecAuthenticator> exec)
    : config_(std::move(config)),
      options_(std::move(options)),
      transport_(std::move(transport)),
      exec_(std::move(exec)),
      tokens_(options_.burst),
      clock_(options_.clock != nullptr ? *options_.clock : RealClock()),
      refilled_(clock_.MonoNow()) {}

absl::StatusOr<std::unique_ptr<Client>> Client::Create(RestConfig config, ClientOptions options) {
  absl::StatusOr<std::unique_ptr<HttpTransport>> transport = HttpTransport::Create(config);
  if (!transport.ok()) return transport.status();
  // client-go runs the plugin only for a user without credentials of its
  // own ("kubectl --token" overrides it, for one).
  std::unique_ptr<ExecAuthenticator> exec;
  const bool own_credentials = !config.token.empty() || !config.token_file.empty() ||
                               !config.username.empty() || !config.client_cert_pem.empty();
  if (config.exec && !own_credentials) {
    ASSIGN_OR_RETURN(exec, ExecAuthenticator::Create(config, options.exec, options.clock));
  }
  if (options.qps <= 0) options.qps = 5;
  if (options.burst <= 0) options.burst = 1;
  return std::unique_ptr<Client>(
      new Client(std::move(config), std::move(options), *std::move(transport), std::move(exec)));
}

// A token bucket: `burst` requests at once, then `qps` a second.
bool Client::WaitForToken(MonoTime deadline) {
  MutexLock lock(mu_);
  while (true) {
    const MonoTime now = clock_.MonoNow();
    const double elapsed = std::chrono::duration<double>(now - refilled_).count();
    tokens_ = std::min<double>(options_.burst, tokens_ + elapsed * options_.qps);
    refilled_ = now;
    if (tokens_ >= 1) {
      tokens_ -= 1;
      return true;
    }
    const auto wait = std::chrono::duration<double>((1 - tokens_) / options_.qps);
    // Other callers may take the token first, so this only refuses a wait
    // that is too long even if none did.
    if (deadline - now < wait) return false;
    lock.Unlock();
    clock_.SleepFor(std::chrono::duration_cast<std::chrono::nanoseconds>(wait));
    lock.Lock();
  }
}

std::chrono::milliseconds Client::Backoff(int attempt) {
  thread_local std::mt19937 rng{std::random_device{}()};
  const int64_t base = options_.backoff_base.count() << std::min(attempt, 20);
  const int64_t capped = std::min<int64_t>(base, options_.backoff_cap.count());
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  return std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(capped) * jitter(rng)));
}

absl::StatusOr<std::shared_ptr<const ExecCredential>> Client::AddCredentials(HttpRequest& request) {
  // A request repeated after a 401 carries the old credential: replace it.
  std::erase_if(request.headers, [](const auto& h) { return h.first == "Authorization"; });
  std::shared_ptr<const ExecCredential> plugin;
  std::string token = config_.token;
  if (exec_ != nullptr) {
    ASSIGN_OR_RETURN(plugin, exec_->Get());
    token = plugin->token;
    request.client_cert_pem = plugin->client_cert_pem;
    request.client_key_pem = plugin->client_key_pem;
  }
  if (!config_.token_file.empty()) {
    // Projected service-account tokens rotate: read the file again when it
    // changes.
    MutexLock lock(mu_);
    struct stat st;
    if (stat(config_.token_file.c_str(), &st) == 0) {
      // A change of time, size or inode (kubelet swaps a symlink) is a new token.
      const std::array<int64_t, 3> stamp = {
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
          static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_ino)};
      if (stamp != file_token_stamp_) {
        absl::StatusOr<std::string> text =
            ReadRegularFile(config_.token_file, kMaxCredentialFileBytes, "token file");
        if (!text.ok()) return text.status();
        file_token_ = std::string(absl::StripAsciiWhitespace(*text));
        file_token_stamp_ = stamp;
      }
    }
    if (!file_token_.empty()) token = file_token_;
  }
  if (!token.empty()) {
    request.headers.emplace_back("Authorization", "Bearer " + token);
  } else if (!config_.username.empty()) {
    request.headers.emplace_back(
        "Authorization",
        "Basic " + absl::Base64Escape(StrCat(config_.username, ":", config_.password)));
  }
  return plugin;
}

bool Client::ForgetRefused(int code, const std::shared_ptr<const ExecCredential>& plugin,
                           bool& reauthenticated) {
  if (code != 401 || plugin == nullptr || reauthenticated) return false;
  reauthenticated = true;
  exec_->Forget(plugin.get());
  return true;
}

absl::StatusOr<json> Client::Call(const std::string& verb, const ResourceRef& ref,
                                  const std::string& ns, const std::string& name,
                                  HttpRequest request, const CallOptions& call) {
  const std::string what =
      StrCat("cannot ", verb, " ", ref.Qualified(), name.empty() ? "" : StrCat(" \"", name, "\""));
  // The call's deadline came before try `attempt` could start; `last` is
  // what the previous try got.
  auto past_deadline = [&](int attempt, std::string_view last) {
    return absl::DeadlineExceededError(StrCat(
        what, ": the call's deadline passed ",
        attempt == 0 ? "before a try" : StrCat("after ", attempt, attempt == 1 ? " try" : " tries"),
        last.empty() ? "" : StrCat("; the last: ", last)));
  };
  // Sleeps `wait` before another try, unless the try would then start past
  // the deadline.
  auto wait_for_retry = [&](std::chrono::milliseconds wait) {
    if (call.deadline - clock_.MonoNow() <= wait) return false;
    clock_.SleepFor(wait);
    return true;
  };
  request.headers.emplace_back("Accept", "application/json");
  request.headers.emplace_back("User-Agent", options_.user_agent);
  ASSIGN_OR_RETURN(std::shared_ptr<const ExecCredential> plugin, AddCredentials(request));
  bool reauthenticated = false;
  std::string last_error;
  for (int attempt = 0;; ++attempt) {
    if (!WaitForToken(call.deadline)) {
      // Said apart from a passed deadline: the requests of others (of this
      // process) have used the client's share of the server.
      return absl::DeadlineExceededError(
          StrCat(what, ": the client's rate limit leaves no room for ",
                 attempt == 0 ? "a try" : "another try", " before the call's deadline",
                 last_error.empty() ? "" : StrCat("; the last: ", last_error)));
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(call.deadline - clock_.MonoNow());
    if (left <= std::chrono::milliseconds(0)) return past_deadline(attempt, last_error);
    request.timeout = std::min(options_.timeout, left);
    absl::StatusOr<HttpResponse> response = transport_->Do(request);
    const bool last = attempt >= options_.max_retries;
    if (!response.ok()) {
      if (last || !Idempotent(request.method)) {
        return absl::Status(response.status().code(),
                            StrCat(what, ": ", response.status().message()));
      }
      last_error = std::string(response.status().message());
      if (!wait_for_retry(Backoff(attempt))) return past_deadline(attempt + 1, last_error);
      continue;
    }
    const int code = response->status;
    if (ForgetRefused(code, plugin, reauthenticated)) {
      ASSIGN_OR_RETURN(plugin, AddCredentials(request));
      continue;
    }
    if (code >= 200 && code < 300) return SuccessBody(response->body, verb, ref);
    const bool retry = code == 429 || (code >= 500 && code != 501 && Idempotent(request.method));
    if (retry && !last) {
      // Past the deadline the server's own answer is the clearer error.
      if (wait_for_retry(RetryWait(*response, Backoff(attempt)))) continue;
    }
    json body = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
    std::optional<ApiStatus> api = ApiStatus::FromJson(body);
    if (!api) {
      api = ApiStatus{.code = code, .message = std::string(Utf8Prefix(response->body, 200))};
    }
    api->code = code;
    return ApiError(verb, ref, ns, name, *api);
  }
}

absl::StatusOr<json> Client::Get(const ResourceRef& ref, const std::string& ns,
                                 const std::string& name, const CallOptions& call) {
  return Call("get", ref, ns, name, {.method = "GET", .path = ref.Path(ns, name)}, call);
}

absl::StatusOr<json> Client::List(const ResourceRef& ref, const std::string& ns,
                                  const ListOptions& options) {
  const std::string query =
      Query({{"labelSelector", options.label_selector},
             {"fieldSelector", options.field_selector},
             {"limit", options.limit > 0 ? std::to_string(options.limit) : ""},
             {"continue", options.continue_token},
             {"resourceVersion", options.resource_version}});
  return Call("list", ref, ns, "", {.method = "GET", .path = ref.Path(ns) + query});
}

absl::StatusOr<json> Client::ListAll(const ResourceRef& ref, const std::string& ns,
                                     ListOptions options) {
  if (options.limit == 0) options.limit = 500;  // kubectl's page size
  json all;
  while (true) {
    absl::StatusOr<json> page = List(ref, ns, options);
    if (!page.ok()) return page.status();
    if (all.is_null()) {
      all = std::move(*page);
    } else {
      for (json& item : (*page)["items"]) all["items"].push_back(std::move(item));
      all["metadata"] = (*page)["metadata"];
    }
    const std::string next = all.value("/metadata/continue"_json_pointer, std::string());
    if (next.empty()) break;
    options.continue_token = next;
  }
  all["metadata"].erase("continue");
  return all;
}

std::string Client::WriteQuery() const {
  return Query({{"fieldValidation", options_.strict_field_validation ? "Strict" : ""}});
}

absl::StatusOr<json> Client::CreateObject(const ResourceRef& ref, const std::string& ns,
                                          const json& object) {
  std::string name = NameOf(object);
  if (name.empty()) name = object.value("/metadata/generateName"_json_pointer, std::string()) + "*";
  return Call("create", ref, ns, name == "*" ? "" : name,
              {.method = "POST",
               .path = ref.Path(ns) + WriteQuery(),
               .headers = {{"Content-Type", "application/json"}},
               .body = object.dump()});
}

absl::Status Client::BindPod(const std::string& ns, const std::string& pod, const std::string& uid,
                             const std::string& node) {
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", pod}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (!uid.empty()) binding["metadata"]["uid"] = uid;
  return Call("create", kPods, ns, pod,
              {.method = "POST",
               .path = kPods.Path(ns, pod, "binding") + WriteQuery(),
               .headers = {{"Content-Type", "application/json"}},
               .body = binding.dump()})
      .status();
}

absl::StatusOr<json> Client::Update(const ResourceRef& ref, const std::string& ns,
                                    const json& object) {
  const std::string name = NameOf(object);
  return Call("update", ref, ns, name,
              {.method = "PUT",
               .path = ref.Path(ns, name) + WriteQuery(),
               .headers = {{"Content-Type", "application/json"}},
               .body = object.dump()});
}

absl::StatusOr<json> Client::UpdateStatus(const ResourceRef& ref, const std::string& ns,
                                          const json& object) {
  const std::string name = NameOf(object);
  return Call("update status of", ref, ns, name,
              {.method = "PUT",
               .path = ref.Path(ns, name, "status") + WriteQuery(),
               .headers = {{"Content-Type", "application/json"}},
               .body = object.dump()});
}

absl::StatusOr<json> Client::Patch(const ResourceRef& ref, const std::string& ns,
                                   const std::string& name, PatchType type, const json& patch,
                                   const PatchOptions& options) {
  if (type == PatchType::kApply && options.field_manager.empty()) {
    return absl::InvalidArgumentError("server-side apply needs a field manager");
  }
  const std::string query =
      Query({{"fieldManager", options.field_manager},
             {"force", options.force ? "true" : ""},
             {"fieldValidation", options_.strict_field_validation ? "Strict" : ""}});
  return Call("patch", ref, ns, name,
              {.method = "PATCH",
               .path = ref.Path(ns, name, options.subresource) + query,
               .headers = {{"Content-Type", ContentType(type)}},
               .body = patch.dump()});
}

namespace {

json DeleteBody(const DeleteOptions& options) {
  json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.propagation.empty()) body["propagationPolicy"] = options.propagation;
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (!options.precondition_uid.empty()) body["preconditions"]["uid"] = options.precondition_uid;
  if (!options.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
  }
  return body;
}

}  // namespace

absl::Status Client::Delete(const ResourceRef& ref, const std::string& ns, const std::string& name,
                            const DeleteOptions& options) {
  return Call("delete", ref, ns, name,
              {.method = "DELETE",
               .path = ref.Path(ns, name),
               .headers = {{"Content-Type", "application/json"}},
               .body = DeleteBody(options).dump()})
      .status();
}

absl::StatusOr<json> Client::DeleteCollection(const ResourceRef& ref, const std::string& ns,
                                              const ListOptions& selectors,
                                              const DeleteOptions& options) {
  return Call("deletecollection", ref, ns, "",
              {.method = "DELETE",
               .path = ref.Path(ns) + Query({{"labelSelector", selectors.label_selector},
                                             {"fieldSelector", selectors.field_selector}}),
               .headers = {{"Content-Type", "application/json"}},
               .body = DeleteBody(options).dump()});
}

absl::StatusOr<json> Client::ReadModifyWrite(const ResourceRef& ref, const std::string& ns,
                                             const std::string& name,
                                             const std::function<absl::Status(json&)>& mutate,
                                             int attempts) {
  absl::Status last;
  for (int i = 0; i < std::max(attempts, 1); ++i) {
    absl::StatusOr<json> current = Get(ref, ns, name);
    if (!current.ok()) return current.status();
    if (absl::Status s = mutate(*current); !s.ok()) return s;
    absl::StatusOr<json> written = Update(ref, ns, *current);
    if (written.ok() || !IsApiConflict(written.status())) return written;
    last = written.status();
  }
  return last;
}

absl::Status Client::CheckDraApi() {
  const ResourceRef group{"resource.k8s.io", "", "", false};
  absl::StatusOr<json> found =
      Call("discover", group, "", "", {.method = "GET", .path = "/apis/resource.k8s.io"});
  std::vector<std::string> versions;
  if (found.ok()) {
    for (const json& v : found->value("versions", json::array())) {
      if (v.is_object() && v.contains("version") && v["version"].is_string()) {
        versions.push_back(v["version"]);
      }
    }
  } else if (!IsApiNotFound(found.status())) {
    return found.status();
  }
  if (std::find(versions.begin(), versions.end(), "v1") != versions.end()) return absl::OkStatus();
  std::string served;
  for (const std::string& v : versions) served += StrCat(served.empty() ? "" : ", ", v);
  return absl::FailedPreconditionError(
      StrCat("the cluster at ", config_.server,
             " does not serve resource.k8s.io/v1, which Dynamic Resource Allocation needs "
             "(Kubernetes 1.34 or newer); it serves ",
             served.empty() ? "no version of resource.k8s.io" : "resource.k8s.io " + served));
}

absl::StatusOr<bool> Client::Serves(const ResourceRef& ref) {
  const std::string path = ref.group.empty() ? StrCat("/api/", ref.version)
                                             : StrCat("/apis/", ref.group, "/", ref.version);
  absl::StatusOr<json> found = Call("discover", ref, "", "", {.method = "GET", .path = path});
  if (!found.ok()) {
    if (IsApiNotFound(found.status())) return false;
    return found.status();
  }
  for (const json& r : found->value("resources", json::array())) {
    if (r.is_object() && r.value("name", json()) == ref.resource) return true;
  }
  return false;
}

absl::Status Client::Watch(const ResourceRef& ref, const std::string& ns,
                           const WatchOptions& options,
                           const std::function<bool(const WatchEvent&)>& handler) {
  std::string version = options.resource_version;
  bool reauthenticated = false;
  for (int failures = 0;;) {
    HttpRequest request{.method = "GET",
                        .path = WatchPath(ref, ns, options, version),
                        .timeout = options_.timeout,
                        .cancel = options.cancel,
                        .stop = options.stop};
    request.headers.emplace_back("Accept", "application/json");
    request.headers.emplace_back("User-Agent", options_.user_agent);
    ASSIGN_OR_RETURN(std::shared_ptr<const ExecCredential> plugin, AddCredentials(request));
    if (StreamEnded(options.cancel, options.stop)) return absl::OkStatus();
    WaitForToken(MonoTime::max());
    std::string buffer;
    bool stop = false;
    absl::Status failed;
    auto on_data = [&](std::string_view data) {
      buffer.append(data);
      size_t newline;
      while ((newline = buffer.find('\n')) != std::string::npos) {
        const std::string line = buffer.substr(0, newline);
        buffer.erase(0, newline + 1);
        if (line.empty()) continue;
        json event = json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (event.is_discarded() || !event.is_object()) {
          failed = absl::InternalError(StrCat("cannot watch ", ref.Qualified(),
                                              ": the server sent an event that is not JSON"));
          return false;
        }
        const std::string type = event.value("type", "");
        if (type == "ERROR") {
          ApiStatus api = ApiStatus::FromJson(event.value("object", json::object()))
                              .value_or(ApiStatus{.code = 500, .message = "watch error"});
          failed = ApiError("watch", ref, ns, "", api);
          return false;
        }
        WatchEvent e{type, std::move(event["object"])};
        const std::string rv =
            e.object.value("/metadata/resourceVersion"_json_pointer, std::string());
        if (!rv.empty()) version = rv;
        if (!handler(e)) {
          stop = true;
          return false;
        }
      }
      return true;
    };
    absl::StatusOr<HttpResponse> response = transport_->Stream(request, on_data);
    if (stop || StreamEnded(options.cancel, options.stop)) return absl::OkStatus();
    if (!failed.ok()) return failed;
    if (!response.ok() || (response->status >= 500 || response->status == 429)) {
      if (++failures > options_.max_retries) {
        return response.ok()
                   ? ApiError("watch", ref, ns, "",
                              ApiStatus::FromJson(json::parse(response->body, nullptr, false))
                                  .value_or(ApiStatus{.code = response->status}))
                   : response.status();
      }
      clock_.SleepFor(Backoff(failures));
      continue;
    }
    if (ForgetRefused(response->status, plugin, reauthenticated)) {
      continue;  // the next connection asks the plugin again
    }
    if (response->status >= 300) {
      ApiStatus api = ApiStatus::FromJson(json::parse(response->body, nullptr, false))
                          .value_or(ApiStatus{.code = response->status});
      api.code = response->status;
      return ApiError("watch", ref, ns, "", api);
    }
    failures = 0;  // the server ended the stream: resume from `version`
    reauthenticated = false;
  }
}

absl::StatusOr<std::string> Client::Logs(const std::string& ns, const std::string& pod,
                                         const LogOptions& options) {
  LogOptions once = options;
  once.follow = false;
  std::string text;
  absl::Status s = StreamLogs(ns, pod, once, [&](std::string_view data) {
    text.append(data);
    return true;
  });
  if (!s.ok()) return s;
  return text;
}

absl::Status Client::StreamLogs(const std::string& ns, const std::string& pod,
                                const LogOptions& options,
                                const std::function<bool(std::string_view)>& on_data) {
  HttpRequest request{
      .method = "GET",
      .path =
          kPods.Path(ns, pod, "log") +
          Query({{"container", options.container},
                 {"follow", options.follow ? "true" : ""},
                 {"sinceSeconds",
                  options.since_seconds > 0 ? std::to_string(options.since_seconds) : ""},
                 {"tailLines", options.tail_lines >= 0 ? std::to_string(options.tail_lines) : ""},
                 {"timestamps", options.timestamps ? "true" : ""}}),
      .timeout = options_.timeout,
      .cancel = options.cancel,
      .stop = options.stop};
  request.headers.emplace_back("Accept", "text/plain, application/json");
  request.headers.emplace_back("User-Agent", options_.user_agent);
  ASSIGN_OR_RETURN(std::shared_ptr<const ExecCredential> plugin, AddCredentials(request));
  bool reauthenticated = false;
  const ResourceRef logs{"", "v1", "pods/log", true};
  for (int attempt = 0;; ++attempt) {
    WaitForToken(MonoTime::max());
    bool stopped = false;
    bool delivered = false;
    absl::StatusOr<HttpResponse> response = transport_->Stream(request, [&](std::string_view data) {
      delivered = true;
      if (on_data(data)) return true;
      stopped = true;
      return false;
    });
    if (stopped || StreamEnded(options.cancel, options.stop)) return absl::OkStatus();
    // Retried like a GET only while nothing was handed out: a repeat would
    // show the caller the same output twice.
    const bool last = attempt >= options_.max_retries || delivered;
    if (!response.ok()) {
      if (last) {
        return absl::Status(response.status().code(), StrCat("cannot get pods/log \"", pod,
                                                             "\": ", response.status().message()));
      }
      clock_.SleepFor(Backoff(attempt));
      continue;
    }
    const int code = response->status;
    if (code >= 200 && code < 300) return absl::OkStatus();
    if (ForgetRefused(code, plugin, reauthenticated)) {
      ASSIGN_OR_RETURN(plugin, AddCredentials(request));
      continue;
    }
    if (!last && (code == 429 || (code >= 500 && code != 501))) {
      clock_.SleepFor(Backoff(attempt));
      continue;
    }
    ApiStatus api =
        ApiStatus::FromJson(json::parse(response->body, nullptr, false))
            .value_or(ApiStatus{.message = std::string(Utf8Prefix(response->body, 200))});
    api.code = code;
    return ApiError("get", logs, ns, pod, api);
  }
}

}  // namespace canhazgpu::kube
