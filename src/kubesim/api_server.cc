#include "kubesim/api_server.h"

#include <openssl/bio.h>
#include <openssl/pem.h>

#include <chrono>
#include <thread>

#include "absl/strings/ascii.h"
#include "core/clock.h"
#include "core/strings.h"
#include "httpfront/httplib_listen.h"
#include "httplib.h"
#include "kubesim/discovery.h"
#include "kubesim/dra_versions.h"
#include "kubesim/http_common.h"
#include "kubesim/table.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  for (std::string_view part : Split(path, '/')) {
    if (!part.empty()) out.emplace_back(part);
  }
  return out;
}

std::string Verb(const httplib::Request& req, const Route& route) {
  if (req.method == "GET") {
    if (BoolParam(req, "watch")) return "watch";
    return route.name.empty() ? "list" : "get";
  }
  if (req.method == "POST") return "create";
  if (req.method == "PUT") return "update";
  if (req.method == "PATCH") return "patch";
  if (req.method == "DELETE") return route.name.empty() ? "deletecollection" : "delete";
  return absl::AsciiStrToLower(req.method);
}

// Parses the REST path of a resource request; nullopt when it names none.
std::optional<Route> ParseRoute(const ObjectStore& store, const std::vector<std::string>& parts) {
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
    return std::nullopt;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<long>(i), parts.end());
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    auto t = store.FindType(route.group, StorageVersion(route), rest[2]);
    if (t && t->namespaced) {
      route.ns = rest[1];
      rest.erase(rest.begin(), rest.begin() + 2);
    }
  }
  if (rest.empty() || rest.size() > 3) return std::nullopt;
  route.resource = rest[0];
  if (rest.size() > 1) route.name = rest[1];
  if (rest.size() > 2) route.sub = rest[2];
  return route;
}

// One line per request on the log, written when the handler returns.
class RequestLog {
 public:
  RequestLog(const httplib::Request& req, const httplib::Response& res,
             const std::function<void(const std::string&)>& log)
      : req_(req), res_(res), log_(log), start_(RealClock().MonoNow()) {}
  ~RequestLog() {
    if (!log_) return;
    const double ms =
        std::chrono::duration<double, std::milli>(RealClock().MonoNow() - start_).count();
    char took[32];
    snprintf(took, sizeof(took), "%.1fms", ms);
    std::string target = req_.path;
    std::string query;
    for (const auto& [k, v] : req_.params) query += StrCat(query.empty() ? "?" : "&", k, "=", v);
    log_(StrCat(req_.method, " ", target, query, " ", res_.status, " ", took));
  }

 private:
  const httplib::Request& req_;
  const httplib::Response& res_;
  const std::function<void(const std::string&)>& log_;
  SteadyClock::time_point start_;
};

constexpr char kDebugPrefix[] = "k8shazgpu-sim";

}  // namespace

ApiServer::ApiServer(ObjectStore& store, ApiServerOptions options)
    : store_(store), options_(std::move(options)), logs_(store.clock()) {}

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
  const int bound = httpfront::BindWithFullBacklog(*server_, host, port);
  if (bound < 0) return absl::UnavailableError(StrCat("cannot listen on ", host, ":", port));
  return bound;
}

void ApiServer::Serve() {
  if (server_ && !stopping_) server_->listen_after_bind();
}

void ApiServer::DropWatches() {
  ++watch_epoch_;
  store_.WakeWatchers();
  logs_.WakeAll();
}

void ApiServer::Stop() {
  stopping_ = true;
  store_.WakeWatchers();
  logs_.WakeAll();
  if (server_) server_->stop();
}

void ApiServer::Handle(const httplib::Request& req, httplib::Response& res) {
  std::optional<std::string> older = OlderDraVersionOf(Segments(req.path));
  if (!older) return HandleStored(req, res);
  // An older version of resource.k8s.io: what is written comes in as v1,
  // what is read goes out as that version (a watch converts each event).
  httplib::Request converted = req;
  if ((req.method == "POST" || req.method == "PUT") && !req.body.empty()) {
    json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_object()) converted.body = DraToV1(*older, std::move(body)).dump();
  }
  HandleStored(converted, res);
  if (res.body.empty() || res.get_header_value("Content-Type").find("json") == std::string::npos)
    return;
  json out = json::parse(res.body, nullptr, /*allow_exceptions=*/false);
  if (out.is_object()) res.body = DraFromV1(*older, std::move(out)).dump();
}

void ApiServer::HandleStored(const httplib::Request& req, httplib::Response& res) {
  RequestLog log_line(req, res, options_.log);
  if (!options_.token.empty() &&
      req.get_header_value("Authorization") != "Bearer " + options_.token) {
    Fail(res, {.code = 401, .reason = "Unauthorized", .message = "Unauthorized"});
    return;
  }
  const std::vector<std::string> parts = Segments(req.path);
  if (parts.size() >= 2 && parts[0] == "debug" && parts[1] == kDebugPrefix) {
    HandleDebug(parts, req, res);
    return;
  }
  if (ServeDiscovery(store_, parts, req, res)) return;

  std::optional<Route> route = ParseRoute(store_, parts);
  std::optional<ResourceType> type;
  if (route) type = store_.FindType(route->group, StorageVersion(*route), route->resource);
  if (!type) {
    Fail(res, NoSuchPath());
    return;
  }
  const std::string verb = Verb(req, *route);
  const std::string resource =
      route->sub.empty() ? route->resource : route->resource + "/" + route->sub;
  if (Denied(verb, *route, res) || InjectFault(verb, resource, res)) return;
  if (route->sub == "exec" && type->group.empty() && type->resource == "pods" &&
      (req.method == "GET" || req.method == "POST")) {
    return HandleExec(*route, req, res);
  }
  if (route->sub == "log" && type->group.empty() && type->resource == "pods" && verb == "get") {
    HandleLog(*route, req, res);
    return;
  }
  if (route->sub == "scale" && type->has_scale) return HandleScale(verb, *type, *route, req, res);
  const bool binding = route->sub == "binding" && type->group.empty() && type->resource == "pods" &&
                       verb == "create";
  if (!route->sub.empty() && route->sub != "status" && !binding) {
    Fail(res, NoSuchPath());
    return;
  }
  if (verb == "list") return HandleList(*type, *route, req, res);
  if (verb == "watch") return HandleWatch(*type, *route, req, res);
  if (verb == "get") {
    Outcome out = store_.Get(*type, route->ns, route->name);
    if (!out.ok()) return Fail(res, *out.error);
    return ReplyRead(*type, req, res, out.object);
  }
  if (verb == "patch") return HandlePatch(*type, *route, req, res);
  if (verb == "create" || verb == "update" || verb == "delete" || verb == "deletecollection") {
    return HandleWrite(verb, *type, *route, req, res);
  }
  Fail(res, {.code = 405,
             .reason = "MethodNotAllowed",
             .message = StrCat(req.method, " is not supported here")});
}

void ApiServer::ReplyRead(const ResourceType& type, const httplib::Request& req,
                          httplib::Response& res, const nlohmann::json& objects) {
  if (!WantsTable(req.get_header_value("Accept"))) return Reply(res, 200, objects);
  res.status = 200;
  res.set_content(
      ToTable(type, objects, CrdOf(type), Param(req, "includeObject"), store_.clock().Now()).dump(),
      "application/json;as=Table;v=v1;g=meta.k8s.io");
}

nlohmann::json ApiServer::CrdOf(const ResourceType& type) const {
  if (type.group.empty()) return nullptr;
  std::optional<ResourceType> crds =
      store_.FindType("apiextensions.k8s.io", "v1", "customresourcedefinitions");
  if (!crds) return nullptr;
  Outcome found = store_.Get(*crds, "", type.resource + "." + type.group);
  return found.ok() ? found.object : nlohmann::json();
}

bool ApiServer::Denied(const std::string& verb, const Route& route, httplib::Response& res) const {
  const std::string resource =
      route.sub.empty() ? route.resource : route.resource + "/" + route.sub;
  for (const std::string& rule : options_.deny) {
    const size_t colon = rule.find(':');
    const std::string v = rule.substr(0, colon);
    const std::string r = colon == std::string::npos ? "*" : rule.substr(colon + 1);
    if ((v != "*" && v != verb) || (r != "*" && r != resource)) continue;
    const std::string qualified =
        route.group.empty() ? route.resource : route.resource + "." + route.group;
    Fail(
        res,
        {.code = 403,
         .reason = "Forbidden",
         .message = StrCat(
             qualified, route.name.empty() ? "" : " \"" + route.name + "\"",
             " is forbidden: User \"", options_.token.empty() ? "system:anonymous" : "sim-user",
             "\" cannot ", verb, " resource \"", resource, "\" in API group \"", route.group, "\"",
             route.ns.empty() ? " at the cluster scope" : " in the namespace \"" + route.ns + "\""),
         .group = route.group,
         .kind = route.resource,
         .name = route.name});
    return true;
  }
  return false;
}

bool ApiServer::InjectFault(const std::string& verb, const std::string& resource,
                            httplib::Response& res) {
  std::optional<Fault> fault = faults_.Take(verb, resource);
  if (!fault) return false;
  // Held in short steps so that Stop() is not kept waiting by a stall.
  const auto until = RealClock().MonoNow() + fault->stall;
  while (!stopping_ && RealClock().MonoNow() < until) {
    RealClock().SleepFor(std::min<SteadyClock::duration>(std::chrono::milliseconds(50),
                                                         until - RealClock().MonoNow()));
  }
  if (fault->code == 0) return false;
  const bool throttled = fault->code == 429;
  const bool forbidden = fault->code == 403;
  // The reason the real server gives each code, so clients tell them apart.
  Fail(res, {.code = fault->code,
             .reason = throttled            ? "TooManyRequests"
                       : forbidden          ? "Forbidden"
                       : fault->code == 401 ? "Unauthorized"
                       : fault->code == 404 ? "NotFound"
                       : fault->code == 409 ? "Conflict"
                       : fault->code >= 500 ? "InternalError"
                                            : "BadRequest",
             .message = throttled ? "the server has received too many requests and has asked "
                                    "us to try again later"
                        : forbidden
                            // The authorizer's wording (RBAC denies as "forbidden").
                            ? StrCat(resource, " is forbidden: User \"system:anonymous\" cannot ",
                                     verb, " resource \"", resource, "\" (injected fault)")
                            : StrCat("injected fault: ", verb, " ", resource),
             .retry_after_seconds = fault->retry_after_seconds});
  return true;
}

void ApiServer::HandleDebug(const std::vector<std::string>& parts, const httplib::Request& req,
                            httplib::Response& res) {
  const std::string what = parts.size() > 2 ? parts[2] : "";
  if (what == "faults" && parts.size() == 3) {
    if (req.method == "GET") {
      json list = json::array();
      for (const Fault& f : faults_.Pending()) list.push_back(f.ToJson());
      return Reply(res, 200, {{"faults", list}});
    }
    if (req.method == "DELETE") {
      faults_.Clear();
      return Reply(res, 200, {{"faults", json::array()}});
    }
    if (req.method == "POST") {
      json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
      absl::StatusOr<Fault> fault = Fault::FromJson(body);
      if (!fault.ok())
        return Fail(res, kube::BadRequestStatus(std::string(fault.status().message())));
      faults_.Add(*fault);
      return Reply(res, 201, fault->ToJson());
    }
  }
  if (what == "drop-watches" && parts.size() == 3 && req.method == "POST") {
    DropWatches();
    return Reply(res, 200, json::object());
  }
  // logs/NS/POD/CONTAINER: the body is appended; ?finish=true ends the log.
  if (what == "logs" && parts.size() == 6 && req.method == "POST") {
    if (!req.body.empty()) logs_.Append(parts[3], parts[4], parts[5], req.body);
    if (BoolParam(req, "finish")) logs_.Finish(parts[3], parts[4], parts[5]);
    return Reply(res, 200, json::object());
  }
  Fail(res, NoSuchPath());
}

}  // namespace canhazgpu::kubesim
