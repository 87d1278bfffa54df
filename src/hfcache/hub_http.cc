#include "hfcache/hub_http.h"

#include <curl/curl.h>

#include <mutex>

#include "absl/strings/ascii.h"
#include "core/strings.h"

namespace canhazgpu::hfcache {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Error bodies are only for messages.
constexpr size_t kMaxErrorBody = 1 << 20;
constexpr size_t kMaxApiBody = 64u << 20;

}  // namespace

struct HubHttp::Exchange {
  CURL* curl = nullptr;
  HubResponse response;
  const FetchCallbacks* callbacks = nullptr;  // null: collect the body (Get)
  bool started = false;
  bool stopped = false;  // a callback said stop
};

namespace {

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* ex = static_cast<HubHttp::Exchange*>(user);
  std::string_view line(data, size * count);
  const size_t colon = line.find(':');
  if (line.starts_with("HTTP/")) {
    ex->response.headers.clear();  // a new response: after a redirect, say
  } else if (colon != std::string_view::npos) {
    std::string name = absl::AsciiStrToLower(std::string(line.substr(0, colon)));
    const std::string raw(line.substr(colon + 1));
    absl::string_view value = absl::StripAsciiWhitespace(raw);
    ex->response.headers[std::move(name)] = std::string(value);
  }
  return size * count;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* ex = static_cast<HubHttp::Exchange*>(user);
  const size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(ex->curl, CURLINFO_RESPONSE_CODE, &status);
  if (ex->callbacks != nullptr && status >= 200 && status < 300) {
    if (!ex->started) {
      ex->started = true;
      if (!ex->callbacks->on_start(static_cast<int>(status), ex->response.headers)) {
        ex->stopped = true;
        return 0;
      }
    }
    if (!ex->callbacks->on_data(std::string_view(data, n))) {
      ex->stopped = true;
      return 0;
    }
    return n;
  }
  const size_t limit = ex->callbacks != nullptr ? kMaxErrorBody : kMaxApiBody;
  if (ex->response.body.size() + n > limit) return 0;
  ex->response.body.append(data, n);
  return n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* ex = static_cast<HubHttp::Exchange*>(user);
  if (ex->callbacks != nullptr && ex->callbacks->on_tick && !ex->callbacks->on_tick()) {
    ex->stopped = true;
    return 1;
  }
  return 0;
}

}  // namespace

HubHttp::HubHttp(HubHttpSettings settings) : settings_(std::move(settings)) {
  GlobalInit();
  curl_ = curl_easy_init();
}

HubHttp::~HubHttp() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

std::string HubHttp::Escape(std::string_view segment) {
  char* escaped =
      curl_easy_escape(static_cast<CURL*>(curl_), segment.data(), static_cast<int>(segment.size()));
  std::string result = escaped != nullptr ? escaped : "";
  curl_free(escaped);
  return result;
}

absl::StatusOr<HubResponse> HubHttp::Get(const std::string& path) {
  Exchange ex;
  CURL* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(settings_.api_timeout.count()));
  return Perform(path, ex);
}

absl::StatusOr<HubResponse> HubHttp::Fetch(const std::string& path, uint64_t offset,
                                           const FetchCallbacks& callbacks) {
  Exchange ex;
  ex.callbacks = &callbacks;
  CURL* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);
  // A stalled body fails after stall_timeout; a slow but moving one never.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                   std::max(1L, static_cast<long>(settings_.stall_timeout.count() / 1000)));
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &ex);
  // Bigger pieces: fewer callbacks and write(2)s per megabyte.
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L * 1024);
  const std::string range = StrCat(offset, "-");
  if (offset > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  return Perform(path, ex);
}

absl::StatusOr<HubResponse> HubHttp::Perform(const std::string& path, Exchange& ex) {
  CURL* curl = static_cast<CURL*>(curl_);
  ex.curl = curl;
  const std::string url = settings_.endpoint + path;
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(settings_.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &ex);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ex);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "canhazgpu-hfcache/1");
  curl_slist* headers = nullptr;
  // Bytes on disk must be the file's bytes, never a compressed encoding.
  headers = curl_slist_append(headers, "Accept-Encoding: identity");
  const std::string auth = StrCat("Authorization: Bearer ", settings_.token);
  if (!settings_.token.empty()) headers = curl_slist_append(headers, auth.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  ex.response.status = static_cast<int>(status);
  if (code == CURLE_OK) return std::move(ex.response);
  if (ex.stopped) return absl::CancelledError("stopped");
  const std::string why = StrCat(url, ": ", error[0] != '\0' ? error : curl_easy_strerror(code));
  if (code == CURLE_OPERATION_TIMEDOUT) return absl::DeadlineExceededError(why);
  return absl::UnavailableError(why);
}

}  // namespace canhazgpu::hfcache
