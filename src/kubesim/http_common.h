// What the simulated API server's request handlers share: the parsed route
// and the few ways a request is answered. Internal to kubesim.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "httplib.h"
#include "kube/api_status.h"
#include "kubesim/dra_versions.h"
#include "kubesim/object_store.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

inline constexpr char kJsonMedia[] = "application/json";

// A request path split into what it names.
struct Route {
  std::string group;  // "" for /api
  std::string version;
  std::string ns;
  std::string resource;
  std::string name;
  std::string sub;  // status, log
};

// The version a route's objects are stored at: v1 for the older versions
// of resource.k8s.io (dra_versions.h), else the route's own.
inline std::string StorageVersion(const Route& route) {
  return IsOlderDraVersion(route.group, route.version) ? "v1" : route.version;
}

inline void Reply(httplib::Response& res, int code, const nlohmann::json& body) {
  res.status = code;
  res.set_content(body.dump(), kJsonMedia);
}

inline void Fail(httplib::Response& res, const kube::ApiStatus& status) {
  if (status.retry_after_seconds > 0) {
    res.set_header("Retry-After", std::to_string(status.retry_after_seconds));
  }
  Reply(res, status.code, status.ToJson());
}

inline std::string Param(const httplib::Request& req, const char* key) {
  return req.has_param(key) ? req.get_param_value(key) : std::string();
}

// A boolean query parameter as the API server reads one
// (Convert_Slice_string_To_bool): absent, "0" or "false" in any case is
// false; anything else, "True" (the official Python client's), "t" and an
// empty value included, is true.
inline bool BoolParam(const httplib::Request& req, const char* key) {
  if (!req.has_param(key)) return false;
  const std::string v = req.get_param_value(key);
  return v != "0" && !absl::EqualsIgnoreCase(v, "false");
}

// A path that names no resource, in the real server's words.
inline kube::ApiStatus NoSuchPath() {
  return {.code = 404,
          .reason = "NotFound",
          .message = "the server could not find the requested resource"};
}

// cpp-httplib gzips a response when the client accepts it (Go's client
// always does) and its compressor holds data until the end: a stream (a
// watch, a followed log) would deliver nothing until it closed. The request
// object is the server's own and not const; dropping the header keeps the
// stream uncompressed.
inline void KeepUncompressed(const httplib::Request& req) {
  const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
}

// The label and field selectors of a list, watch or deletecollection;
// InvalidArgument for one the real server would reject.
absl::StatusOr<ListOptions> SelectorsOf(const ResourceType& type, const httplib::Request& req);

}  // namespace canhazgpu::kubesim
