#include "kubesim/api_server.h"

#include <openssl/bio.h>
#include <openssl/pem.h>

#include <chrono>

#include "absl/strings/ascii.h"
#include "core/strings.h"
#include "httplib.h"
#include "kubesim/openapi_documents.h"
#include "kubesim/patch.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kJson[] = "application/json";

// A request path split into what it names.
struct Route {
  std::string group;  // "" for /api
  std::string version;
  std::string ns;
  std::string resource;
  std::string name;
  std::string sub;  // status, log
};

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  for (std::string_view part : Split(path, '/')) {
    if (!part.empty()) out.emplace_back(part);
  }
  return out;
}

void Reply(httplib::Response& res, int code, const json& body) {
  res.status = code;
  res.set_content(body.dump(), kJson);
}

void Fail(httplib::Response& res, const kube::ApiStatus& status) {
  if (status.retry_after_seconds > 0) {
    res.set_header("Retry-After", std::to_string(status.retry_after_seconds));
  }
  Reply(res, status.code, status.ToJson());
}

std::string Param(const httplib::Request& req, const char* key) {
  return req.has_param(key) ? req.get_param_value(key) : std::string();
}

// A path that names no resource, in the real server's words.
kube::ApiStatus NoSuchPath() {
  return {.code = 404,
          .reason = "NotFound",
          .message = "the server could not find the requested resource"};
}

bool Truthy(const std::string& v) { return v == "true" || v == "1"; }

std::string Verb(const httplib::Request& req, const Route& route) {
  if (req.method == "GET") {
    if (Truthy(Param(req, "watch"))) return "watch";
    return route.name.empty() ? "list" : "get";
  }
  if (req.method == "POST") return "create";
  if (req.method == "PUT") return "update";
  if (req.method == "PATCH") return "patch";
  if (req.method == "DELETE") return route.name.empty() ? "deletecollection" : "delete";
  return absl::AsciiStrToLower(req.method);
}

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
  } else {
    r["verbs"] = {"get", "patch", "update"};
  }
  return r;
}

}  // namespace

ApiServer::ApiServer(ObjectStore& store, ApiServerOptions options)
    : store_(store), options_(std::move(options)) {}

ApiServer::~ApiServer() { Stop(); }

absl::StatusOr<int> ApiServer::Bind(const std::string& host, int port) {
  if (!options_.tls_cert_pem.empty()) {
    BIO* cert_bio = BIO_new_mem_buf(options_.tls_cert_pem.data(),
                                    static_cast<int>(options_.tls_cert_pem.size()));
    BIO* key_bio =
        BIO_new_mem_buf(options_.tls_key_pem.data(), static_cast<int>(options_.tls_key_pem.size()));
    X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
    BIO_free(cert_bio);
    BIO_free(key_bio);
    if (cert == nullptr || key == nullptr) {
      X509_free(cert);
      EVP_PKEY_free(key);
      return absl::InvalidArgumentError("the TLS certificate or key is not PEM");
    }
    X509_STORE* client_cas = nullptr;
    if (!options_.tls_client_ca_pem.empty()) {
      BIO* ca_bio = BIO_new_mem_buf(options_.tls_client_ca_pem.data(),
                                    static_cast<int>(options_.tls_client_ca_pem.size()));
      X509* ca = PEM_read_bio_X509(ca_bio, nullptr, nullptr, nullptr);
      BIO_free(ca_bio);
      if (ca == nullptr) {
        X509_free(cert);
        EVP_PKEY_free(key);
        return absl::InvalidArgumentError("the client CA certificate is not PEM");
      }
      client_cas = X509_STORE_new();  // owned by the server from here on
      X509_STORE_add_cert(client_cas, ca);
      X509_free(ca);
    }
    server_ = std::make_unique<httplib::SSLServer>(cert, key, client_cas);
    X509_free(cert);
    EVP_PKEY_free(key);
    if (!static_cast<httplib::SSLServer*>(server_.get())->is_valid()) {
      return absl::InvalidArgumentError("the TLS certificate and key do not make a server");
    }
  } else {
    server_ = std::make_unique<httplib::Server>();
  }
  // Watches hold a connection each; a pool of 8 would starve.
  server_->new_task_queue = [] { return new httplib::ThreadPool(64); };
  // Headers and body go out in two writes; with Nagle's algorithm the second
  // waits for the client's delayed ACK, 40 ms a request.
  server_->set_tcp_nodelay(true);
  server_->set_payload_max_length(3 << 20);  // etcd's request limit, as the real server
  auto handler = [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); };
  server_->Get(".*", handler);
  server_->Post(".*", handler);
  server_->Put(".*", handler);
  server_->Patch(".*", handler);
  server_->Delete(".*", handler);
  int bound = port == 0 ? server_->bind_to_any_port(host) : port;
  if (port != 0 && !server_->bind_to_port(host, port)) bound = -1;
  if (bound < 0) return absl::UnavailableError(StrCat("cannot listen on ", host, ":", port));
  return bound;
}

void ApiServer::Serve() {
  if (server_ && !stopping_) server_->listen_after_bind();
}

void ApiServer::DropWatches() {
  ++watch_epoch_;
  store_.WakeWatchers();
}

void ApiServer::Stop() {
  stopping_ = true;
  store_.WakeWatchers();
  if (server_) server_->stop();
}

void ApiServer::Handle(const httplib::Request& req, httplib::Response& res) {
  const auto start = Clock::now();
  struct LogLine {
    const httplib::Request& req;
    httplib::Response& res;
    const ApiServerOptions& options;
    Clock::time_point start;
    ~LogLine() {
      if (!options.log) return;
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      char took[32];
      snprintf(took, sizeof(took), "%.1fms", ms);
      std::string target = req.path;
      if (!req.params.empty()) {
        std::string query;
        for (const auto& [k, v] : req.params) query += StrCat(query.empty() ? "?" : "&", k, "=", v);
        target += query;
      }
      options.log(StrCat(req.method, " ", target, " ", res.status, " ", took));
    }
  } log_line{req, res, options_, start};

  if (!options_.token.empty() &&
      req.get_header_value("Authorization") != "Bearer " + options_.token) {
    Fail(res, {.code = 401, .reason = "Unauthorized", .message = "Unauthorized"});
    return;
  }

  const std::vector<std::string> parts = Segments(req.path);
  // ---- discovery ----
  if (req.method == "GET") {
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
      return;
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
        Reply(res, 200, {{"paths", paths}});
        return;
      }
      std::string path;
      for (size_t k = 2; k < parts.size(); ++k) path += StrCat(path.empty() ? "" : "/", parts[k]);
      for (const OpenApiDocument& doc : OpenApiDocuments()) {
        if (doc.group_version_path == path) {
          res.status = 200;
          res.set_content(std::string(doc.json), kJson);
          return;
        }
      }
    }
    if (parts.size() == 1 && parts[0] == "api") {
      Reply(res, 200,
            {{"kind", "APIVersions"},
             {"versions", {"v1"}},
             {"serverAddressByClientCIDRs",
              {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", req.get_header_value("Host")}}}}});
      return;
    }
    if (parts.size() == 1 &&
        (parts[0] == "healthz" || parts[0] == "readyz" || parts[0] == "livez")) {
      res.status = 200;
      res.set_content("ok", "text/plain");
      return;
    }
    const std::vector<ResourceType> types = store_.Types();
    auto group_json = [&](const std::string& group) {
      json versions = json::array();
      for (const ResourceType& t : types) {
        if (t.group != group) continue;
        json v = {{"groupVersion", t.api_version()}, {"version", t.version}};
        if (std::find(versions.begin(), versions.end(), v) == versions.end()) versions.push_back(v);
      }
      return json{{"kind", "APIGroup"},
                  {"apiVersion", "v1"},
                  {"name", group},
                  {"versions", versions},
                  {"preferredVersion", versions.empty() ? json::object() : versions[0]}};
    };
    if (parts.size() == 1 && parts[0] == "apis") {
      json groups = json::array();
      std::vector<std::string> seen;
      for (const ResourceType& t : types) {
        if (t.group.empty() || std::find(seen.begin(), seen.end(), t.group) != seen.end()) continue;
        seen.push_back(t.group);
        json g = group_json(t.group);
        g.erase("kind");
        g.erase("apiVersion");
        groups.push_back(std::move(g));
      }
      Reply(res, 200, {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}});
      return;
    }
    if (parts.size() == 2 && parts[0] == "apis") {
      json g = group_json(parts[1]);
      if (g["versions"].empty()) {
        Fail(res, NoSuchPath());
        return;
      }
      Reply(res, 200, g);
      return;
    }
    const bool legacy_list = parts.size() == 2 && parts[0] == "api";
    const bool group_list = parts.size() == 3 && parts[0] == "apis";
    if (legacy_list || group_list) {
      const std::string group = legacy_list ? "" : parts[1];
      const std::string version = legacy_list ? parts[1] : parts[2];
      json resources = json::array();
      for (const ResourceType& t : types) {
        if (t.group != group || t.version != version) continue;
        resources.push_back(ApiResource(t, ""));
        if (t.has_status) resources.push_back(ApiResource(t, "status"));
        if (t.group.empty() && t.resource == "pods") resources.push_back(ApiResource(t, "log"));
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
      return;
    }
  }

  // ---- resources ----
  Route route;
  size_t i = 0;
  if (parts.size() >= 3 && parts[0] == "api") {
    route.version = parts[1];
    i = 2;
  } else if (parts.size() >= 4 && parts[0] == "apis") {
    route.group = parts[1];
    route.version = parts[2];
    i = 3;
  } else {
    Fail(res, NoSuchPath());
    return;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<long>(i), parts.end());
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    auto t = store_.FindType(route.group, route.version, rest[2]);
    if (t && t->namespaced) {
      route.ns = rest[1];
      rest.erase(rest.begin(), rest.begin() + 2);
    }
  }
  if (rest.empty() || rest.size() > 3) {
    Fail(res, NoSuchPath());
    return;
  }
  route.resource = rest[0];
  if (rest.size() > 1) route.name = rest[1];
  if (rest.size() > 2) route.sub = rest[2];
  std::optional<ResourceType> type = store_.FindType(route.group, route.version, route.resource);
  if (!type) {
    Fail(res, NoSuchPath());
    return;
  }
  const std::string verb = Verb(req, route);
  for (const std::string& rule : options_.deny) {
    const size_t colon = rule.find(':');
    const std::string v = rule.substr(0, colon);
    const std::string r = colon == std::string::npos ? "*" : rule.substr(colon + 1);
    const std::string resource =
        route.sub.empty() ? route.resource : route.resource + "/" + route.sub;
    if ((v == "*" || v == verb) && (r == "*" || r == resource)) {
      const std::string qualified =
          route.group.empty() ? route.resource : route.resource + "." + route.group;
      Fail(res, {.code = 403,
                 .reason = "Forbidden",
                 .message =
                     StrCat(qualified, route.name.empty() ? "" : " \"" + route.name + "\"",
                            " is forbidden: User \"",
                            options_.token.empty() ? "system:anonymous" : "sim-user", "\" cannot ",
                            verb, " resource \"", resource, "\" in API group \"", route.group, "\"",
                            route.ns.empty() ? " at the cluster scope"
                                             : " in the namespace \"" + route.ns + "\""),
                 .group = route.group,
                 .kind = route.resource,
                 .name = route.name});
      return;
    }
  }
  if (!route.sub.empty() && route.sub != "status") {
    Fail(res, NoSuchPath());
    return;
  }
  const bool status_sub = route.sub == "status";
  const bool strict = Param(req, "fieldValidation") == "Strict";

  if (verb == "list" || verb == "watch") {
    ListOptions options;
    auto labels = LabelSelector::Parse(Param(req, "labelSelector"));
    if (!labels.ok())
      return Fail(res, kube::BadRequestStatus(std::string(labels.status().message())));
    auto fields = FieldSelector::Parse(Param(req, "fieldSelector"));
    if (!fields.ok())
      return Fail(res, kube::BadRequestStatus(std::string(fields.status().message())));
    for (const std::string& field : fields->Fields()) {
      const bool known = field == "metadata.name" || field == "metadata.namespace" ||
                         std::find(type->selectable_fields.begin(), type->selectable_fields.end(),
                                   field) != type->selectable_fields.end();
      if (!known) {
        return Fail(res, kube::BadRequestStatus(StrCat("field label not supported: ", field)));
      }
    }
    options.labels = *std::move(labels);
    options.fields = *std::move(fields);
    if (verb == "list") {
      const std::string limit = Param(req, "limit");
      if (!limit.empty()) {
        char* end = nullptr;
        options.limit = std::strtoll(limit.c_str(), &end, 10);
        if (*end != '\0' || options.limit < 0) {
          return Fail(res, kube::BadRequestStatus(StrCat("invalid limit: ", limit)));
        }
      }
      options.continue_token = Param(req, "continue");
      Outcome out = store_.List(*type, route.ns, options);
      if (!out.ok()) return Fail(res, *out.error);
      return Reply(res, 200, out.object);
    }
    // Watch: from the given version, or everything now as ADDED first.
    const std::string rv_text = Param(req, "resourceVersion");
    int64_t after = 0;
    std::vector<WatchEvent> initial;
    if (rv_text.empty() || rv_text == "0") {
      Outcome list = store_.List(*type, route.ns, options);
      after = std::stoll(list.object["metadata"]["resourceVersion"].get<std::string>());
      for (json& item : list.object["items"])
        initial.push_back({"ADDED", after, type->key(), "", std::move(item)});
    } else {
      char* end = nullptr;
      after = std::strtoll(rv_text.c_str(), &end, 10);
      if (*end != '\0' || after < 0) {
        return Fail(res, kube::BadRequestStatus(StrCat("invalid resourceVersion: ", rv_text)));
      }
    }
    const bool bookmarks = Truthy(Param(req, "allowWatchBookmarks"));
    const std::string timeout_text = Param(req, "timeoutSeconds");
    const int timeout = timeout_text.empty() ? 1800 : std::max(1, std::atoi(timeout_text.c_str()));
    const auto deadline = Clock::now() + std::chrono::seconds(timeout);
    const ResourceType watched = *type;
    const std::string ns = route.ns;
    auto state =
        std::make_shared<std::pair<int64_t, std::vector<WatchEvent>>>(after, std::move(initial));
    auto last_bookmark = std::make_shared<Clock::time_point>(Clock::now());
    const int epoch = watch_epoch_;
    // cpp-httplib gzips a response when the client accepts it (Go's client
    // always does) and its compressor holds data until the end: a watch would
    // deliver nothing until it closed. The request object is the server's own
    // and not const; dropping the header keeps this stream uncompressed.
    const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
    res.status = 200;
    res.set_chunked_content_provider(kJson, [this, state, watched, ns, options, bookmarks, deadline,
                                             last_bookmark,
                                             epoch](size_t, httplib::DataSink& sink) {
      auto send = [&](const json& event) {
        const std::string line = event.dump() + "\n";
        return sink.write(line.data(), line.size());
      };
      for (WatchEvent& e : state->second) {
        if (!send({{"type", e.type}, {"object", e.object}})) return false;
      }
      state->second.clear();
      if (stopping_ || watch_epoch_ != epoch || Clock::now() >= deadline) {
        sink.done();
        return true;
      }
      std::vector<WatchEvent> events;
      const auto wait = std::min<Clock::duration>(std::chrono::seconds(1), deadline - Clock::now());
      if (!store_.WaitForEvents(watched, ns, state->first,
                                std::chrono::duration_cast<std::chrono::milliseconds>(wait),
                                &events)) {
        kube::ApiStatus gone{.code = 410,
                             .reason = "Expired",
                             .message = StrCat("too old resource version: ", state->first, " (",
                                               store_.resource_version(), ")")};
        send({{"type", "ERROR"}, {"object", gone.ToJson()}});
        sink.done();
        return true;
      }
      for (const WatchEvent& e : events) {
        state->first = std::max(state->first, e.resource_version);
        const json& meta = e.object.value("metadata", json::object());
        if (!options.labels.Matches(meta.value("labels", json())) ||
            !options.fields.Matches(e.object)) {
          continue;
        }
        if (!send({{"type", e.type}, {"object", e.object}})) return false;
      }
      if (bookmarks &&
          Clock::now() - *last_bookmark >= std::chrono::seconds(options_.bookmark_seconds)) {
        *last_bookmark = Clock::now();
        const int64_t rv = std::max(state->first, store_.resource_version());
        state->first = rv;
        if (!send({{"type", "BOOKMARK"},
                   {"object",
                    {{"kind", watched.kind},
                     {"apiVersion", watched.api_version()},
                     {"metadata", {{"resourceVersion", std::to_string(rv)}}}}}})) {
          return false;
        }
      }
      return sink.is_writable();
    });
    return;
  }

  if (verb == "get") {
    Outcome out = store_.Get(*type, route.ns, route.name);
    if (!out.ok()) return Fail(res, *out.error);
    return Reply(res, 200, out.object);
  }

  json body;
  if (!req.body.empty() && verb != "patch") {
    const std::string content_type = req.get_header_value("Content-Type");
    const std::string media = content_type.substr(0, content_type.find(';'));
    if (!media.empty() && media != kJson && media != "application/yaml") {
      // Protobuf and CBOR are not spoken here; clients that can fall back to
      // JSON do so on 415.
      return Fail(res,
                  {.code = 415,
                   .reason = "UnsupportedMediaType",
                   .message = StrCat("the body of the request was in an unknown format (", media,
                                     ") - accepted media types include: application/json, "
                                     "application/yaml")});
    }
    if (media == "application/yaml") {
      absl::StatusOr<json> yaml = YamlToJson(req.body);
      if (!yaml.ok())
        return Fail(res, kube::BadRequestStatus(std::string(yaml.status().message())));
      body = *std::move(yaml);
    } else {
      body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
      if (body.is_discarded()) {
        return Fail(res, kube::BadRequestStatus("the request body is not JSON"));
      }
    }
  }
  if (verb == "create") {
    if (!route.name.empty()) {
      return Fail(res, {.code = 405,
                        .reason = "MethodNotAllowed",
                        .message = "POST to a named object is not allowed"});
    }
    Outcome out = store_.Create(*type, route.ns, std::move(body), strict);
    if (!out.ok()) return Fail(res, *out.error);
    return Reply(res, 201, out.object);
  }
  if (verb == "update") {
    Outcome out = store_.Update(*type, route.ns, route.name, std::move(body), status_sub, strict);
    if (!out.ok()) return Fail(res, *out.error);
    return Reply(res, 200, out.object);
  }
  if (verb == "patch") {
    std::optional<PatchType> patch_type = PatchTypeOf(req.get_header_value("Content-Type"));
    if (!patch_type) {
      return Fail(
          res, {.code = 415,
                .reason = "UnsupportedMediaType",
                .message = StrCat("the body of the request was in an unknown format - accepted "
                                  "media types include: application/json-patch+json, "
                                  "application/merge-patch+json, application/apply-patch+yaml")});
    }
    absl::StatusOr<json> patch = ParsePatchBody(*patch_type, req.body);
    if (!patch.ok())
      return Fail(res, kube::BadRequestStatus(std::string(patch.status().message())));
    if (*patch_type == PatchType::kApply && Param(req, "fieldManager").empty()) {
      return Fail(res,
                  kube::BadRequestStatus(
                      "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is "
                      "required for apply patch"));
    }
    // Read, patch, write with the read version: a concurrent writer gets
    // a Conflict here and the patch is retried, as the real server does.
    for (int attempt = 0; attempt < 5; ++attempt) {
      Outcome current = store_.Get(*type, route.ns, route.name);
      if (!current.ok()) {
        if (*patch_type != PatchType::kApply || current.error->code != 404 || status_sub) {
          return Fail(res, *current.error);
        }
        json object = *patch;
        object["metadata"]["name"] = route.name;
        object["metadata"]["managedFields"] = {{{"manager", Param(req, "fieldManager")},
                                                {"operation", "Apply"},
                                                {"apiVersion", type->api_version()},
                                                {"time", store_.Timestamp()},
                                                {"fieldsType", "FieldsV1"},
                                                {"fieldsV1", json::object()}}};
        Outcome created = store_.Create(*type, route.ns, std::move(object), strict);
        if (!created.ok()) return Fail(res, *created.error);
        return Reply(res, 201, created.object);
      }
      absl::StatusOr<json> patched = ApplyPatch(*patch_type, current.object, *patch);
      if (!patched.ok()) {
        return Fail(
            res,
            {.code = 422, .reason = "Invalid", .message = std::string(patched.status().message())});
      }
      json& meta = (*patched)["metadata"];
      meta["resourceVersion"] = current.object["metadata"]["resourceVersion"];
      Outcome out =
          store_.Update(*type, route.ns, route.name, *std::move(patched), status_sub, strict);
      if (!out.ok() && out.error->reason == "Conflict") continue;
      if (!out.ok()) return Fail(res, *out.error);
      return Reply(res, 200, out.object);
    }
    return Fail(res, kube::ConflictStatus(type->group, type->resource, route.name,
                                          "too many concurrent writers"));
  }
  if (verb == "delete") {
    DeleteOptions options;
    if (!Param(req, "propagationPolicy").empty())
      options.propagation = Param(req, "propagationPolicy");
    if (body.is_object()) {
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
    }
    Outcome out = store_.Delete(*type, route.ns, route.name, options);
    if (!out.ok()) return Fail(res, *out.error);
    return Reply(res, 200, out.object);
  }
  Fail(res, {.code = 405,
             .reason = "MethodNotAllowed",
             .message = StrCat(req.method, " is not supported here")});
}

}  // namespace canhazgpu::kubesim
