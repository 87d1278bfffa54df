#include "kube/api_status.h"

#include "core/strings.h"

namespace canhazgpu::kube {
namespace {

std::string Qualified(const std::string& group, const std::string& resource) {
  return group.empty() ? resource : StrCat(resource, ".", group);
}

}  // namespace

nlohmann::json ApiStatus::ToJson() const {
  nlohmann::json j = {
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason},
      {"code", code}};
  nlohmann::json details = nlohmann::json::object();
  if (!name.empty()) details["name"] = name;
  if (!group.empty()) details["group"] = group;
  if (!kind.empty()) details["kind"] = kind;
  if (!causes.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const StatusCause& c : causes) {
      list.push_back({{"reason", c.reason}, {"message", c.message}, {"field", c.field}});
    }
    details["causes"] = std::move(list);
  }
  if (retry_after_seconds > 0) details["retryAfterSeconds"] = retry_after_seconds;
  if (!details.empty()) j["details"] = std::move(details);
  return j;
}

std::optional<ApiStatus> ApiStatus::FromJson(const nlohmann::json& j) {
  if (!j.is_object() || j.value("kind", "") != "Status") return std::nullopt;
  ApiStatus s;
  auto text = [](const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  s.reason = text(j, "reason");
  s.message = text(j, "message");
  if (auto code = j.find("code"); code != j.end() && code->is_number_integer()) {
    s.code = code->get<int>();
  }
  if (auto details = j.find("details"); details != j.end() && details->is_object()) {
    s.name = text(*details, "name");
    s.group = text(*details, "group");
    s.kind = text(*details, "kind");
    if (auto r = details->find("retryAfterSeconds");
        r != details->end() && r->is_number_integer()) {
      s.retry_after_seconds = r->get<int>();
    }
    if (auto causes = details->find("causes"); causes != details->end() && causes->is_array()) {
      for (const nlohmann::json& c : *causes) {
        if (!c.is_object()) continue;
        s.causes.push_back({text(c, "reason"), text(c, "message"), text(c, "field")});
      }
    }
  }
  return s;
}

ApiStatus NotFoundStatus(const std::string& group, const std::string& resource,
                         const std::string& name) {
  return {.code = 404,
          .reason = "NotFound",
          .message = StrCat(Qualified(group, resource), " \"", name, "\" not found"),
          .group = group,
          .kind = resource,
          .name = name};
}

ApiStatus AlreadyExistsStatus(const std::string& group, const std::string& resource,
                              const std::string& name) {
  return {.code = 409,
          .reason = "AlreadyExists",
          .message = StrCat(Qualified(group, resource), " \"", name, "\" already exists"),
          .group = group,
          .kind = resource,
          .name = name};
}

ApiStatus ConflictStatus(const std::string& group, const std::string& resource,
                         const std::string& name, const std::string& why) {
  return {.code = 409,
          .reason = "Conflict",
          .message = StrCat("Operation cannot be fulfilled on ", Qualified(group, resource), " \"",
                            name, "\": ", why),
          .group = group,
          .kind = resource,
          .name = name};
}

ApiStatus BadRequestStatus(const std::string& message) {
  return {.code = 400, .reason = "BadRequest", .message = message};
}

ApiStatus InvalidStatus(const std::string& group, const std::string& kind, const std::string& name,
                        std::vector<StatusCause> causes) {
  // The server's wording: Kind.group "name" is invalid: [field: why, ...].
  std::string list;
  for (const StatusCause& cause : causes) {
    list += StrCat(list.empty() ? "" : ", ", cause.field, ": ", cause.message);
  }
  std::string message = StrCat(group.empty() ? kind : StrCat(kind, ".", group), " \"", name,
                               "\" is invalid: ", causes.size() > 1 ? "[" + list + "]" : list);
  return {.code = 422,
          .reason = "Invalid",
          .message = std::move(message),
          .group = group,
          .kind = kind,
          .name = name,
          .causes = std::move(causes)};
}

}  // namespace canhazgpu::kube
