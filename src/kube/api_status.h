// The API server's `Status` object (meta/v1): what every failed request
// answers, and what our errors are made from. Shared by the client, which
// reads it, and the simulated server, which writes it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace canhazgpu::kube {

// One reason a write was Invalid: `field` is a path like
// spec.devices[3].name.
struct StatusCause {
  std::string reason;  // FieldValueInvalid, FieldValueRequired, FieldValueTooLong, ...
  std::string message;
  std::string field;
};

struct ApiStatus {
  int code = 500;
  // NotFound, AlreadyExists, Conflict, Invalid, Forbidden, Unauthorized,
  // Gone, Expired, TooManyRequests, BadRequest, MethodNotAllowed,
  // NotAcceptable, UnsupportedMediaType, Timeout, InternalError.
  std::string reason;
  std::string message;
  // details: which object.
  std::string group;
  std::string kind;  // the resource, as the server names it (pods)
  std::string name;
  std::vector<StatusCause> causes;
  int retry_after_seconds = 0;

  nlohmann::json ToJson() const;
  // nullopt when `j` is not a Status of kind Status.
  static std::optional<ApiStatus> FromJson(const nlohmann::json& j);
};

// Constructors for the common failures, with the server's wording.
ApiStatus NotFoundStatus(const std::string& group, const std::string& resource,
                         const std::string& name);
ApiStatus AlreadyExistsStatus(const std::string& group, const std::string& resource,
                              const std::string& name);
ApiStatus ConflictStatus(const std::string& group, const std::string& resource,
                         const std::string& name, const std::string& why);
ApiStatus BadRequestStatus(const std::string& message);
ApiStatus InvalidStatus(const std::string& group, const std::string& kind, const std::string& name,
                        std::vector<StatusCause> causes);

}  // namespace canhazgpu::kube
