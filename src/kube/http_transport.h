// HTTP to one API server over libcurl: TLS from a RestConfig (CA, client
// certificate and key from memory, or no verification when asked; a request
// may bring its own client certificate), the
// connections kept and reused across requests and threads, a timeout on
// every request, and streamed bodies for watches and logs. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kube/kubeconfig.h"
#include "kube/stop_pipe.h"

namespace canhazgpu::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // "/api/v1/pods?limit=500", appended to the server URL
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The whole exchange for Do(); for Stream(), only connecting and the
  // response headers (a watch may then run as long as the server keeps it).
  std::chrono::milliseconds timeout{30'000};
  // When set and it turns true, the exchange ends within a tenth of a
  // second (Cancelled): for a flag a signal handler sets.
  const std::atomic<bool>* cancel = nullptr;
  // When set, the exchange ends (Cancelled) as soon as it is stopped: its
  // pipe is polled with the connection. Lets a quiet watch stop at once.
  const StopPipe* stop = nullptr;
  // A client certificate and key (PEM) for this request in place of the
  // config's: an exec plugin's, which may change while the transport lives.
  std::string client_cert_pem;
  std::string client_key_pem;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

class HttpTransport {
 public:
  // `config` gives the server and TLS settings (not the credentials: the
  // caller adds an Authorization header).
  static absl::StatusOr<std::unique_ptr<HttpTransport>> Create(const RestConfig& config);
  ~HttpTransport();

  // Unavailable (connection refused, TLS failure, ...) or DeadlineExceeded
  // when no HTTP response came; any HTTP status is a response.
  absl::StatusOr<HttpResponse> Do(const HttpRequest& request);

  // Sends `request` and hands the body to `on_data` as it arrives, until the
  // server ends it or `on_data` returns false (then OK too). The response's
  // status and headers are in the result; its body is empty unless the
  // status was not 2xx (then the body is collected, not streamed).
  absl::StatusOr<HttpResponse> Stream(const HttpRequest& request,
                                      const std::function<bool(std::string_view)>& on_data);

 private:
  struct Impl;
  explicit HttpTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace canhazgpu::kube
