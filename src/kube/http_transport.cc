#include "kube/http_transport.h"

#include <curl/curl.h>

#include <array>
#include <mutex>

#include "absl/strings/ascii.h"
#include "core/mutex.h"
#include "core/strings.h"

namespace canhazgpu::kube {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// What one exchange collects.
struct Exchange {
  CURL* curl = nullptr;
  HttpResponse response;
  const std::function<bool(std::string_view)>* on_data = nullptr;
  bool stopped_by_reader = false;
};

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  std::string_view line(data, size * count);
  const size_t colon = line.find(':');
  if (line.starts_with("HTTP/")) {
    ex->response.headers.clear();  // a new response (after 100 Continue, say)
  } else if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n')) value.remove_suffix(1);
    ex->response.headers[absl::AsciiStrToLower(name)] = std::string(value);
  }
  return size * count;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t n = size * count;
  if (ex->on_data != nullptr) {
    long status = 0;
    curl_easy_getinfo(ex->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
      if (!(*ex->on_data)(std::string_view(data, n))) {
        ex->stopped_by_reader = true;
        return 0;  // aborts the transfer
      }
      return n;
    }
  }
  // Bound what is collected: no API response is near 64 MiB.
  if (ex->response.body.size() + n > (64u << 20)) return 0;
  ex->response.body.append(data, n);
  return n;
}

// How often a cancellable exchange looks at its flag while the connection
// is quiet. curl_easy_perform would look only from curl's progress callback,
// which runs once a second on an idle connection: every informer's Stop()
// then took a second, and a simulated cluster's shutdown four.
constexpr int kCancelPollMillis = 100;
// With only a stop pipe nothing needs looking at: the pipe wakes the poll
// (curl wakes it sooner for its own timers).
constexpr int kQuietPollMillis = 10 * 60 * 1000;

bool Stopped(const std::atomic<bool>* cancel, const StopPipe* stop) {
  return (cancel != nullptr && cancel->load()) || (stop != nullptr && stop->stopped());
}

// curl_easy_perform, but returning CURLE_ABORTED_BY_CALLBACK as soon as
// `stop` is stopped (its pipe is polled with the transfer), or within
// kCancelPollMillis of `cancel` turning true.
CURLcode PerformCancellable(CURL* curl, const std::atomic<bool>* cancel, const StopPipe* stop) {
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) return CURLE_OUT_OF_MEMORY;
  curl_multi_add_handle(multi, curl);
  curl_waitfd wake{
      .fd = stop != nullptr ? stop->fd() : -1, .events = CURL_WAIT_POLLIN, .revents = 0};
  const unsigned int wake_fds = wake.fd >= 0 ? 1 : 0;
  const int poll_millis = cancel != nullptr || wake_fds == 0 ? kCancelPollMillis : kQuietPollMillis;
  CURLcode result = CURLE_OK;
  int running = 1;
  while (running > 0) {
    if (Stopped(cancel, stop)) {
      result = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    CURLMcode code = curl_multi_perform(multi, &running);
    if (code == CURLM_OK && running > 0) {
      code = curl_multi_poll(multi, wake_fds > 0 ? &wake : nullptr, wake_fds, poll_millis, nullptr);
    }
    if (code != CURLM_OK) {
      result = CURLE_RECV_ERROR;
      break;
    }
  }
  int left = 0;
  while (CURLMsg* message = curl_multi_info_read(multi, &left)) {
    if (message->msg == CURLMSG_DONE && result == CURLE_OK) result = message->data.result;
  }
  curl_multi_remove_handle(multi, curl);
  curl_multi_cleanup(multi);
  return result;
}

}  // namespace

struct HttpTransport::Impl {
  std::string server;
  RestConfig tls;  // only the TLS fields are used
  // With tls-server-name: the URL names that host (curl's SNI and the name
  // the certificate must carry) and this "name:port:host:port" sends the
  // connection to the real address.
  curl_slist* connect_to = nullptr;
  CURLSH* share = nullptr;
  std::array<Mutex, CURL_LOCK_DATA_LAST> locks;

  // curl takes a lock in one call and lets it go in another, which the
  // thread-safety analysis cannot pair.
  static void Lock(CURL*, curl_lock_data data, curl_lock_access,
                   void* user) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<Impl*>(user)->locks[static_cast<size_t>(data)].lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* user) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<Impl*>(user)->locks[static_cast<size_t>(data)].unlock();
  }

  absl::StatusOr<HttpResponse> Run(const HttpRequest& request,
                                   const std::function<bool(std::string_view)>* on_data) {
    CURL* curl = curl_easy_init();
    if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
    Exchange ex{.curl = curl, .on_data = on_data};
    char error[CURL_ERROR_SIZE] = "";
    const std::string url = server + request.path;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_SHARE, share);
    if (connect_to != nullptr) curl_easy_setopt(curl, CURLOPT_CONNECT_TO, connect_to);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &ex);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ex);
    const long timeout = static_cast<long>(request.timeout.count());
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout);
    if (on_data == nullptr) curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout);
    if (request.method == "GET") {
      curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    } else {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
    }
    curl_slist* headers = nullptr;
    for (const auto& [name, value] : request.headers) {
      headers = curl_slist_append(headers, StrCat(name, ": ", value).c_str());
    }
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    if (!tls.ca_pem.empty()) {
      curl_blob ca{const_cast<char*>(tls.ca_pem.data()), tls.ca_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
    }
    // curl reuses a connection only for the same client certificate, so a
    // changed one gets a new connection.
    const bool own_cert = !request.client_cert_pem.empty();
    const std::string& cert_pem = own_cert ? request.client_cert_pem : tls.client_cert_pem;
    const std::string& key_pem = own_cert ? request.client_key_pem : tls.client_key_pem;
    if (!cert_pem.empty()) {
      curl_blob cert{const_cast<char*>(cert_pem.data()), cert_pem.size(), CURL_BLOB_COPY};
      curl_blob key{const_cast<char*>(key_pem.data()), key_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
      curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (tls.insecure_skip_tls_verify) {
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    const CURLcode code = request.cancel != nullptr || request.stop != nullptr
                              ? PerformCancellable(curl, request.cancel, request.stop)
                              : curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    ex.response.status = static_cast<int>(status);
    if (code == CURLE_OK || (code == CURLE_WRITE_ERROR && ex.stopped_by_reader)) {
      return std::move(ex.response);
    }
    const std::string why = error[0] != '\0' ? error : curl_easy_strerror(code);
    const std::string what = StrCat(request.method, " ", url, ": ", why);
    if (code == CURLE_OPERATION_TIMEDOUT) return absl::DeadlineExceededError(what);
    if (code == CURLE_ABORTED_BY_CALLBACK) return absl::CancelledError(what);
    // A stream the server cut short after a response began still returns
    // what it got; the caller resumes.
    if (status >= 200 && on_data != nullptr) return std::move(ex.response);
    return absl::UnavailableError(what);
  }
};

HttpTransport::HttpTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpTransport::~HttpTransport() {
  if (impl_ && impl_->share) curl_share_cleanup(impl_->share);
  if (impl_) curl_slist_free_all(impl_->connect_to);
}

absl::StatusOr<std::unique_ptr<HttpTransport>> HttpTransport::Create(const RestConfig& config) {
  GlobalInit();
  if (!config.server.starts_with("https://") && !config.server.starts_with("http://")) {
    return absl::InvalidArgumentError(
        StrCat("server \"", config.server, "\" is not an http:// or https:// URL"));
  }
  auto impl = std::make_unique<Impl>();
  impl->server = config.server;
  if (!config.tls_server_name.empty() && config.server.starts_with("https://")) {
    // "https://host:port/prefix" -> host (brackets kept for IPv6) and port.
    const std::string_view rest = std::string_view(config.server).substr(8);
    const std::string_view authority = rest.substr(0, rest.find('/'));
    const size_t bracket = authority.rfind(']');
    const size_t colon = authority.rfind(':');
    const bool has_port =
        colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket);
    const std::string_view host = has_port ? authority.substr(0, colon) : authority;
    const std::string port(has_port ? authority.substr(colon + 1) : "443");
    impl->server =
        StrCat("https://", config.tls_server_name, ":", port, rest.substr(authority.size()));
    impl->connect_to = curl_slist_append(
        nullptr, StrCat(config.tls_server_name, ":", port, ":", host, ":", port).c_str());
  }
  impl->tls.ca_pem = config.ca_pem;
  impl->tls.client_cert_pem = config.client_cert_pem;
  impl->tls.client_key_pem = config.client_key_pem;
  impl->tls.insecure_skip_tls_verify = config.insecure_skip_tls_verify;
  impl->share = curl_share_init();
  curl_share_setopt(impl->share, CURLSHOPT_LOCKFUNC, &Impl::Lock);
  curl_share_setopt(impl->share, CURLSHOPT_UNLOCKFUNC, &Impl::Unlock);
  curl_share_setopt(impl->share, CURLSHOPT_USERDATA, impl.get());
  curl_share_setopt(impl->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
  curl_share_setopt(impl->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(impl->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  return std::unique_ptr<HttpTransport>(new HttpTransport(std::move(impl)));
}

absl::StatusOr<HttpResponse> HttpTransport::Do(const HttpRequest& request) {
  return impl_->Run(request, nullptr);
}

absl::StatusOr<HttpResponse> HttpTransport::Stream(
    const HttpRequest& request, const std::function<bool(std::string_view)>& on_data) {
  return impl_->Run(request, &on_data);
}

}  // namespace canhazgpu::kube
