#include "kubesim/discovery.h"

#include <algorithm>

#include "absl/strings/str_replace.h"
#include "core/strings.h"
#include "kubesim/dra_versions.h"
#include "kubesim/http_common.h"
#include "kubesim/openapi_documents.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

json ApiResource(const ResourceType& t, const std::string& sub) {
  json r = {{"name", sub.empty() ? t.resource : t.resource + "/" + sub},
            {"singularName", sub.empty() ? t.singular : ""},
            {"namespaced", t.namespaced},
            {"kind", t.kind}};
  if (sub.empty()) {
    r["verbs"] = {"create", "delete", "deletecollection", "get",
                  "list",   "patch",  "update",           "watch"};
    if (!t.short_names.empty()) r["shortNames"] = t.short_names;
    r["storageVersionHash"] = "";
  } else if (sub == "log") {
    r["verbs"] = {"get"};
  } else if (sub == "binding") {
    r["verbs"] = {"create"};
    r["kind"] = "Binding";
  } else if (sub == "scale") {
    r["verbs"] = {"get", "patch", "update"};
    r["group"] = "autoscaling";
    r["version"] = "v1";
    r["kind"] = "Scale";
  } else {
    r["verbs"] = {"get", "patch", "update"};
  }
  return r;
}

// Swagger 2.0 made from the served OpenAPI v3 documents: every kind's
// definition (references rewritten to #/definitions/), no paths.
const std::string& OpenApiV2Document() {
  static const std::string* document = [] {
    json definitions = json::object();
    auto add = [&](std::string_view text) {
      const std::string rewritten =
          absl::StrReplaceAll(std::string(text), {{"#/components/schemas/", "#/definitions/"}});
      json doc = json::parse(rewritten);
      for (auto& [name, schema] : doc["components"]["schemas"].items())
        definitions[name] = std::move(schema);
    };
    for (const OpenApiDocument& doc : OpenApiDocuments()) add(doc.json);
    for (const std::string& version : OlderDraVersions()) add(OlderDraOpenApiDocument(version));
    return new std::string(json{{"swagger", "2.0"},
                                {"info", {{"title", "Kubernetes"}, {"version", "v1.34.0"}}},
                                {"paths", json::object()},
                                {"definitions", std::move(definitions)}}
                               .dump());
  }();
  return *document;
}

// /openapi/v2, and /openapi/v3 with one document per group-version; false
// for a path it does not know.
bool ServeOpenApi(const std::vector<std::string>& parts, const httplib::Request& req,
                  httplib::Response& res) {
  if (parts.size() == 2 && parts[0] == "openapi" && parts[1] == "v2") {
    // client-go asks for the protobuf encoding only; JSON is what others
    // (curl, older tools) read, and what this server serves.
    const std::string accept = req.get_header_value("Accept");
    if (accept.find("protobuf") != std::string::npos && accept.find("json") == std::string::npos) {
      Fail(res, {.code = 406,
                 .reason = "NotAcceptable",
                 .message = "only the following media types are accepted: application/json "
                            "(the simulated API server serves /openapi/v2 as JSON; kubectl "
                            "reads /openapi/v3)"});
      return true;
    }
    res.status = 200;
    res.set_content(OpenApiV2Document(), kJsonMedia);
    return true;
  }
  if (parts.size() >= 2 && parts[0] == "openapi" && parts[1] == "v3") {
    // The index, then one document per group-version, as kubectl reads them.
    if (parts.size() == 2) {
      json paths = json::object();
      for (const OpenApiDocument& doc : OpenApiDocuments()) {
        const std::string path(doc.group_version_path);
        paths[path] = {
            {"serverRelativeURL", StrCat("/openapi/v3/", path, "?hash=", doc.json.size())}};
      }
      for (const std::string& version : OlderDraVersions()) {
        const std::string path = StrCat("apis/", kDraGroup, "/", version);
        paths[path] = {{"serverRelativeURL", StrCat("/openapi/v3/", path, "?hash=", version)}};
      }
      Reply(res, 200, {{"paths", paths}});
      return true;
    }
    std::string path;
    for (size_t k = 2; k < parts.size(); ++k) path += StrCat(path.empty() ? "" : "/", parts[k]);
    if (parts.size() == 5 && parts[2] == "apis" && IsOlderDraVersion(parts[3], parts[4])) {
      res.status = 200;
      res.set_content(OlderDraOpenApiDocument(parts[4]), kJsonMedia);
      return true;
    }
    for (const OpenApiDocument& doc : OpenApiDocuments()) {
      if (doc.group_version_path == path) {
        res.status = 200;
        res.set_content(std::string(doc.json), kJsonMedia);
        return true;
      }
    }
  }
  return false;
}

// The APIGroup of `group`, its versions those of `types` (no versions: the
// server has no such group).
json DiscoveryGroup(const std::vector<ResourceType>& types, const std::string& group) {
  json versions = json::array();
  for (const ResourceType& t : types) {
    if (t.group != group) continue;
    json v = {{"groupVersion", t.api_version()}, {"version", t.version}};
    if (std::find(versions.begin(), versions.end(), v) == versions.end()) versions.push_back(v);
  }
  if (group == kDraGroup && !versions.empty()) {
    for (const std::string& version : OlderDraVersions())
      versions.push_back({{"groupVersion", StrCat(group, "/", version)}, {"version", version}});
  }
  return json{{"kind", "APIGroup"},
              {"apiVersion", "v1"},
              {"name", group},
              {"versions", versions},
              {"preferredVersion", versions.empty() ? json::object() : versions[0]}};
}

// The APIResourceList of one group-version (the legacy group: "").
void ServeResourceList(const std::vector<ResourceType>& types, const std::string& group,
                       const std::string& version, httplib::Response& res) {
  json resources = json::array();
  const std::string stored = IsOlderDraVersion(group, version) ? "v1" : version;
  for (const ResourceType& t : types) {
    if (t.group != group || t.version != stored) continue;
    resources.push_back(ApiResource(t, ""));
    if (t.has_status) resources.push_back(ApiResource(t, "status"));
    if (t.has_scale) resources.push_back(ApiResource(t, "scale"));
    if (t.group.empty() && t.resource == "pods") {
      resources.push_back(ApiResource(t, "binding"));
      resources.push_back(ApiResource(t, "log"));
    }
  }
  if (resources.empty()) {
    Fail(res, NoSuchPath());
    return;
  }
  Reply(res, 200,
        {{"kind", "APIResourceList"},
         {"apiVersion", "v1"},
         {"groupVersion", group.empty() ? version : group + "/" + version},
         {"resources", resources}});
}

}  // namespace

bool ServeDiscovery(const ObjectStore& store, const std::vector<std::string>& parts,
                    const httplib::Request& req, httplib::Response& res) {
  if (req.method != "GET") return false;
  if (parts.size() == 1 && parts[0] == "version") {
    Reply(res, 200,
          {{"major", "1"},
           {"minor", "34"},
           {"gitVersion", "v1.34.0-k8shazgpu-sim"},
           {"gitCommit", "0000000000000000000000000000000000000000"},
           {"gitTreeState", "clean"},
           {"buildDate", "2026-01-01T00:00:00Z"},
           {"goVersion", "go1.24"},
           {"compiler", "gc"},
           {"platform", "linux/amd64"}});
    return true;
  }
  if (parts.size() >= 2 && parts[0] == "openapi" && ServeOpenApi(parts, req, res)) return true;
  if (parts.size() == 1 && parts[0] == "api") {
    Reply(res, 200,
          {{"kind", "APIVersions"},
           {"versions", {"v1"}},
           {"serverAddressByClientCIDRs",
            {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", req.get_header_value("Host")}}}}});
    return true;
  }
  if (parts.size() == 1 && (parts[0] == "healthz" || parts[0] == "readyz" || parts[0] == "livez")) {
    res.status = 200;
    res.set_content("ok", "text/plain");
    return true;
  }
  const std::vector<ResourceType> types = store.Types();
  if (parts.size() == 1 && parts[0] == "apis") {
    json groups = json::array();
    std::vector<std::string> seen;
    for (const ResourceType& t : types) {
      if (t.group.empty() || std::find(seen.begin(), seen.end(), t.group) != seen.end()) continue;
      seen.push_back(t.group);
      json g = DiscoveryGroup(types, t.group);
      g.erase("kind");
      g.erase("apiVersion");
      groups.push_back(std::move(g));
    }
    Reply(res, 200, {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}});
    return true;
  }
  if (parts.size() == 2 && parts[0] == "apis") {
    json g = DiscoveryGroup(types, parts[1]);
    if (g["versions"].empty()) {
      Fail(res, NoSuchPath());
      return true;
    }
    Reply(res, 200, g);
    return true;
  }
  const bool legacy_list = parts.size() == 2 && parts[0] == "api";
  const bool group_list = parts.size() == 3 && parts[0] == "apis";
  if (legacy_list || group_list) {
    const std::string group = legacy_list ? "" : parts[1];
    const std::string version = legacy_list ? parts[1] : parts[2];
    ServeResourceList(types, group, version, res);
    return true;
  }
  return false;
}

}  // namespace canhazgpu::kubesim
