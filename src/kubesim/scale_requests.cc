// The scale subresource of Deployments and ReplicaSets (what `kubectl
// scale` reads and patches): an autoscaling/v1 Scale made from the object,
// whose spec.replicas is written back to the object's.
#include "core/strings.h"
#include "kube/label_selector.h"
#include "kubesim/api_server.h"
#include "kubesim/http_common.h"
#include "kubesim/patch.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

int64_t ReplicasOf(const json& object, const json::json_pointer& at) {
  return object.contains(at) && object.at(at).is_number_integer() ? object.at(at).get<int64_t>()
                                                                  : 0;
}

json ScaleOf(const json& object) {
  json meta = json::object();
  for (const char* key : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}) {
    if (object["metadata"].contains(key)) meta[key] = object["metadata"][key];
  }
  return {{"kind", "Scale"},
          {"apiVersion", "autoscaling/v1"},
          {"metadata", meta},
          {"spec", {{"replicas", ReplicasOf(object, "/spec/replicas"_json_pointer)}}},
          {"status",
           {{"replicas", ReplicasOf(object, "/status/replicas"_json_pointer)},
            {"selector", kube::LabelSelectorText(
                             object.value("/spec/selector"_json_pointer, json::object()))}}}};
}

}  // namespace

void ApiServer::HandleScale(const std::string& verb, const ResourceType& type, const Route& route,
                            const httplib::Request& req, httplib::Response& res) {
  if (verb != "get" && verb != "update" && verb != "patch") {
    return Fail(res, {.code = 405,
                      .reason = "MethodNotAllowed",
                      .message = StrCat(req.method, " is not supported on the scale subresource")});
  }
  std::optional<json> patch;
  std::optional<PatchType> patch_type;
  if (verb == "patch") {
    patch_type = PatchTypeOf(req.get_header_value("Content-Type"));
    if (!patch_type || *patch_type == PatchType::kApply) {
      return Fail(res, {.code = 415,
                        .reason = "UnsupportedMediaType",
                        .message = "the scale subresource takes json, merge and strategic "
                                   "merge patches"});
    }
    absl::StatusOr<json> body = ParsePatchBody(*patch_type, req.body);
    if (!body.ok()) return Fail(res, kube::BadRequestStatus(std::string(body.status().message())));
    patch = *std::move(body);
  }
  for (int attempt = 0; attempt < 5; ++attempt) {
    Outcome current = store_.Get(type, route.ns, route.name);
    if (!current.ok()) return Fail(res, *current.error);
    if (verb == "get") return Reply(res, 200, ScaleOf(current.object));
    json scale;
    if (patch) {
      absl::StatusOr<json> patched = ApplyPatch(*patch_type, ScaleOf(current.object), *patch);
      if (!patched.ok()) {
        return Fail(
            res,
            {.code = 422, .reason = "Invalid", .message = std::string(patched.status().message())});
      }
      scale = *std::move(patched);
    } else {
      absl::StatusOr<json> body = ParsePatchBody(PatchType::kMerge, req.body);
      if (!body.ok() || !body->is_object()) {
        return Fail(res, kube::BadRequestStatus("the body must be a Scale object"));
      }
      scale = *std::move(body);
    }
    const json replicas = scale.value("/spec/replicas"_json_pointer, json());
    if (!replicas.is_number_integer() || replicas.get<int64_t>() < 0) {
      return Fail(res, kube::InvalidStatus("autoscaling", "Scale", route.name,
                                           {{"FieldValueInvalid",
                                             StrCat("Invalid value: ", replicas.dump(),
                                                    ": must be greater than or equal to 0"),
                                             "spec.replicas"}}));
    }
    json updated = current.object;
    updated["spec"]["replicas"] = replicas;
    Outcome out = store_.Update(type, route.ns, route.name, std::move(updated), false);
    if (!out.ok() && out.error->reason == "Conflict") continue;
    if (!out.ok()) return Fail(res, *out.error);
    return Reply(res, 200, ScaleOf(out.object));
  }
  return Fail(res, kube::ConflictStatus(type.group, type.resource, route.name,
                                        "too many concurrent writers"));
}

}  // namespace canhazgpu::kubesim
