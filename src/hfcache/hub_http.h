// HTTP(S) to one Hugging Face endpoint over libcurl, for one download at a
// time: the bearer token on every request (libcurl drops it on redirects to
// another host, as the Hub's CDN redirects need), redirects followed, one
// connection kept across requests, a stall timeout instead of a total one so
// a large file may take as long as it needs, bodies streamed to the caller,
// and a tick about once a second that can cancel. Not thread-safe: one
// HubHttp per downloading thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace canhazgpu::hfcache {

struct HubHttpSettings {
  std::string endpoint;  // "https://huggingface.co", no trailing '/'
  std::string token;     // sent as "Authorization: Bearer ..." when set
  std::chrono::milliseconds connect_timeout{10'000};
  // Small API requests: the whole exchange.
  std::chrono::milliseconds api_timeout{30'000};
  // File bodies: fail when no byte arrives for this long.
  std::chrono::milliseconds stall_timeout{60'000};
};

struct HubResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // the final response's, names in lower case
  std::string body;  // Get(); for Fetch() only a non-2xx response's (bounded)
};

// Called for a 2xx body: first on_start(status, headers) (200, or 206 for a
// range; header names in lower case), then on_data for each piece.
// Returning false from any of them ends the exchange, and Fetch returns
// Cancelled: the callbacks keep their own reason for stopping.
struct FetchCallbacks {
  std::function<bool(int status, const std::map<std::string, std::string>& headers)> on_start;
  std::function<bool(std::string_view bytes)> on_data;
  // About once a second and after each piece; false cancels.
  std::function<bool()> on_tick;
};

class HubHttp {
 public:
  explicit HubHttp(HubHttpSettings settings);
  ~HubHttp();
  HubHttp(const HubHttp&) = delete;
  HubHttp& operator=(const HubHttp&) = delete;

  const HubHttpSettings& settings() const { return settings_; }

  // GET endpoint + `path` ("/api/models/..."), the body collected (at most
  // 64 MiB). Unavailable or DeadlineExceeded when no HTTP response came;
  // every HTTP status is a response.
  absl::StatusOr<HubResponse> Get(const std::string& path);

  // GET endpoint + `path` from byte `offset` on (a Range request when > 0),
  // the body handed to `callbacks`. Cancelled when a callback stopped it,
  // Unavailable when the connection broke mid-body (resumable),
  // DeadlineExceeded when it stalled.
  absl::StatusOr<HubResponse> Fetch(const std::string& path, uint64_t offset,
                                    const FetchCallbacks& callbacks);

  // `segment` percent-encoded for a URL path (keeps unreserved characters).
  std::string Escape(std::string_view segment);

  struct Exchange;  // one request's state, for libcurl's callbacks

 private:
  absl::StatusOr<HubResponse> Perform(const std::string& path, Exchange& exchange);

  HubHttpSettings settings_;
  void* curl_;  // CURL*, reused so the connection is kept
};

}  // namespace canhazgpu::hfcache
