// The REST verbs on stored objects: list, create, update, patch, delete and
// deletecollection (get is one line in api_server.cc; watch and pods/log
// stream, in their own files).
#include <algorithm>

#include "core/strings.h"
#include "kubesim/api_server.h"
#include "kubesim/http_common.h"
#include "kubesim/patch.h"
#include "yaml/yaml_json.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

bool StrictOf(const httplib::Request& req) { return Param(req, "fieldValidation") == "Strict"; }

// The request's object, JSON or YAML (kubectl sends either); null for an
// empty body.
std::optional<json> BodyOf(const httplib::Request& req, httplib::Response& res) {
  if (req.body.empty()) return json();
  const std::string content_type = req.get_header_value("Content-Type");
  const std::string media = content_type.substr(0, content_type.find(';'));
  if (!media.empty() && media != kJsonMedia && media != "application/yaml") {
    // Protobuf and CBOR are not spoken here; clients that can fall back to
    // JSON do so on 415.
    Fail(res, {.code = 415,
               .reason = "UnsupportedMediaType",
               .message = StrCat("the body of the request was in an unknown format (", media,
                                 ") - accepted media types include: application/json, "
                                 "application/yaml")});
    return std::nullopt;
  }
  if (media == "application/yaml") {
    absl::StatusOr<json> from_yaml = yaml::ToJson(req.body);
    if (!from_yaml.ok()) {
      Fail(res, kube::BadRequestStatus(std::string(from_yaml.status().message())));
      return std::nullopt;
    }
    return *std::move(from_yaml);
  }
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    Fail(res, kube::BadRequestStatus("the request body is not JSON"));
    return std::nullopt;
  }
  return body;
}

// DeleteOptions from the query and the body (kubectl sends a body).
DeleteOptions DeleteOptionsOf(const httplib::Request& req, const json& body) {
  DeleteOptions options;
  if (!Param(req, "propagationPolicy").empty())
    options.propagation = Param(req, "propagationPolicy");
  auto grace = [&options](const json& value) {
    if (value.is_number_integer()) options.grace_period_seconds = value.get<int64_t>();
    if (value.is_string()) {
      char* end = nullptr;
      const std::string text = value.get<std::string>();
      const long long seconds = std::strtoll(text.c_str(), &end, 10);
      if (!text.empty() && *end == '\0') options.grace_period_seconds = seconds;
    }
  };
  if (!Param(req, "gracePeriodSeconds").empty()) grace(json(Param(req, "gracePeriodSeconds")));
  if (!body.is_object()) return options;
  if (body.contains("gracePeriodSeconds")) grace(body["gracePeriodSeconds"]);
  if (body.contains("propagationPolicy") && body["propagationPolicy"].is_string()) {
    options.propagation = body["propagationPolicy"];
  }
  if (body.contains("preconditions") && body["preconditions"].is_object()) {
    const json& p = body["preconditions"];
    if (p.contains("uid") && p["uid"].is_string()) options.precondition_uid = p["uid"];
    if (p.contains("resourceVersion") && p["resourceVersion"].is_string()) {
      options.precondition_resource_version = p["resourceVersion"];
    }
  }
  return options;
}

}  // namespace

absl::StatusOr<ListOptions> SelectorsOf(const ResourceType& type, const httplib::Request& req) {
  ListOptions options;
  absl::StatusOr<LabelSelector> labels = LabelSelector::Parse(Param(req, "labelSelector"));
  if (!labels.ok()) return labels.status();
  absl::StatusOr<FieldSelector> fields = FieldSelector::Parse(Param(req, "fieldSelector"));
  if (!fields.ok()) return fields.status();
  for (const std::string& field : fields->Fields()) {
    const bool known = field == "metadata.name" || field == "metadata.namespace" ||
                       std::find(type.selectable_fields.begin(), type.selectable_fields.end(),
                                 field) != type.selectable_fields.end();
    if (!known) return absl::InvalidArgumentError(StrCat("field label not supported: ", field));
  }
  options.labels = *std::move(labels);
  options.fields = *std::move(fields);
  return options;
}

void ApiServer::HandleList(const ResourceType& type, const Route& route,
                           const httplib::Request& req, httplib::Response& res) {
  absl::StatusOr<ListOptions> options = SelectorsOf(type, req);
  if (!options.ok())
    return Fail(res, kube::BadRequestStatus(std::string(options.status().message())));
  const std::string limit = Param(req, "limit");
  if (!limit.empty()) {
    char* end = nullptr;
    options->limit = std::strtoll(limit.c_str(), &end, 10);
    if (*end != '\0' || options->limit < 0) {
      return Fail(res, kube::BadRequestStatus(StrCat("invalid limit: ", limit)));
    }
  }
  options->continue_token = Param(req, "continue");
  Outcome out = store_.List(type, route.ns, *options);
  if (!out.ok()) return Fail(res, *out.error);
  ReplyRead(type, req, res, out.object);
}

void ApiServer::HandleWrite(const std::string& verb, const ResourceType& type, const Route& route,
                            const httplib::Request& req, httplib::Response& res) {
  std::optional<json> body = BodyOf(req, res);
  if (!body) return;
  if (verb == "create" && route.sub == "binding") {
    Outcome out = store_.BindPod(route.ns, route.name, *std::move(body), StrictOf(req));
    if (!out.ok()) return Fail(res, *out.error);
    return Reply(res, 201, out.object);
  }
  if (verb == "create") {
    if (!route.name.empty()) {
      return Fail(res, {.code = 405,
                        .reason = "MethodNotAllowed",
                        .message = "POST to a named object is not allowed"});
    }
    Outcome out = store_.Create(type, route.ns, *std::move(body), StrictOf(req));
    if (!out.ok()) return Fail(res, *out.error);
    return Reply(res, 201, out.object);
  }
  if (verb == "update") {
    Outcome out = store_.Update(type, route.ns, route.name, *std::move(body), route.sub == "status",
                                StrictOf(req));
    if (!out.ok()) return Fail(res, *out.error);
    return Reply(res, 200, out.object);
  }
  const DeleteOptions options = DeleteOptionsOf(req, *body);
  if (verb == "delete") {
    Outcome out = store_.Delete(type, route.ns, route.name, options);
    if (!out.ok()) return Fail(res, *out.error);
    // A pod in its grace period keeps its logs until its kubelet removes it.
    if (type.group.empty() && type.resource == "pods" &&
        !store_.Get(type, route.ns, route.name).ok()) {
      logs_.Forget(route.ns, route.name);
    }
    return Reply(res, 200, out.object);
  }
  // deletecollection: every object the selectors match, answered with the
  // list of what was deleted, as the real server does.
  absl::StatusOr<ListOptions> selectors = SelectorsOf(type, req);
  if (!selectors.ok()) {
    return Fail(res, kube::BadRequestStatus(std::string(selectors.status().message())));
  }
  Outcome matched = store_.List(type, route.ns, *selectors);
  if (!matched.ok()) return Fail(res, *matched.error);
  json deleted = json::array();
  for (const json& item : matched.object["items"]) {
    const std::string name = item["metadata"].value("name", "");
    const std::string ns = item["metadata"].value("namespace", "");
    Outcome out = store_.Delete(type, ns, name, options);
    if (!out.ok() && out.error->code != 404) return Fail(res, *out.error);
    if (!out.ok()) continue;  // deleted meanwhile
    if (type.group.empty() && type.resource == "pods") logs_.Forget(ns, name);
    deleted.push_back(std::move(out.object));
  }
  matched.object["items"] = std::move(deleted);
  Reply(res, 200, matched.object);
}

void ApiServer::HandlePatch(const ResourceType& type, const Route& route,
                            const httplib::Request& req, httplib::Response& res) {
  std::optional<PatchType> patch_type = PatchTypeOf(req.get_header_value("Content-Type"));
  if (!patch_type) {
    return Fail(res,
                {.code = 415,
                 .reason = "UnsupportedMediaType",
                 .message = StrCat("the body of the request was in an unknown format - accepted "
                                   "media types include: application/json-patch+json, "
                                   "application/merge-patch+json, application/apply-patch+yaml")});
  }
  absl::StatusOr<json> patch = ParsePatchBody(*patch_type, req.body);
  if (!patch.ok()) return Fail(res, kube::BadRequestStatus(std::string(patch.status().message())));
  if (*patch_type == PatchType::kApply && Param(req, "fieldManager").empty()) {
    return Fail(res,
                kube::BadRequestStatus(
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is "
                    "required for apply patch"));
  }
  // Read, patch, write with the read version: a concurrent writer gets
  // a Conflict here and the patch is retried, as the real server does.
  for (int attempt = 0; attempt < 5; ++attempt) {
    Outcome current = store_.Get(type, route.ns, route.name);
    if (!current.ok()) {
      if (*patch_type != PatchType::kApply || current.error->code != 404 || route.sub == "status") {
        return Fail(res, *current.error);
      }
      json object =
          IsOlderDraVersion(route.group, route.version) ? DraToV1(route.version, *patch) : *patch;
      object["metadata"]["name"] = route.name;
      object["metadata"]["managedFields"] = {{{"manager", Param(req, "fieldManager")},
                                              {"operation", "Apply"},
                                              {"apiVersion", type.api_version()},
                                              {"time", store_.Timestamp()},
                                              {"fieldsType", "FieldsV1"},
                                              {"fieldsV1", json::object()}}};
      Outcome created = store_.Create(type, route.ns, std::move(object), StrictOf(req));
      if (!created.ok()) return Fail(res, *created.error);
      return Reply(res, 201, created.object);
    }
    // An older version of resource.k8s.io is patched in its own shape.
    const bool older = IsOlderDraVersion(route.group, route.version);
    absl::StatusOr<json> patched = ApplyPatch(
        *patch_type, older ? DraFromV1(route.version, current.object) : current.object, *patch);
    if (!patched.ok()) {
      return Fail(
          res,
          {.code = 422, .reason = "Invalid", .message = std::string(patched.status().message())});
    }
    if (older) patched = DraToV1(route.version, *std::move(patched));
    json& meta = (*patched)["metadata"];
    meta["resourceVersion"] = current.object["metadata"]["resourceVersion"];
    Outcome out = store_.Update(type, route.ns, route.name, *std::move(patched),
                                route.sub == "status", StrictOf(req));
    if (!out.ok() && out.error->reason == "Conflict") continue;
    if (!out.ok()) return Fail(res, *out.error);
    return Reply(res, 200, out.object);
  }
  return Fail(res, kube::ConflictStatus(type.group, type.resource, route.name,
                                        "too many concurrent writers"));
}

}  // namespace canhazgpu::kubesim
