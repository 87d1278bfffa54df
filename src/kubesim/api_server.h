// The simulated API server's HTTP front: the Kubernetes REST paths, verbs,
// discovery, watch streams and Status errors, over an ObjectStore. Serves
// plain HTTP or TLS (cpp-httplib); one thread per connection from a pool,
// so long watches do not starve other requests. Stop() may be called from
// any thread (a signal handler's thread, a test).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "kubesim/faults.h"
#include "kubesim/object_store.h"
#include "kubesim/pod_logs.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace canhazgpu::kubesim {

struct Route;
struct ResourceType;

struct ApiServerOptions {
  // Bearer token every request must carry; empty: anyone may.
  std::string token;
  // "VERB:RESOURCE" pairs answered 403 (VERB or RESOURCE may be "*").
  std::vector<std::string> deny;
  // PEM server certificate and key: TLS when both are set.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // With TLS: clients must present a certificate signed by this CA.
  std::string tls_client_ca_pem;
  // Receives one line per request ("GET /api/v1/pods 200 1.2ms").
  std::function<void(const std::string&)> log;
  // How often a watch that asked for bookmarks gets one.
  int bookmark_seconds = 10;
};

// `kubectl exec`: the command to run in a pod's container.
struct ExecRequest {
  std::string ns;
  std::string pod;
  std::string container;  // "" when the pod has several and none was named
  std::vector<std::string> argv;
  bool tty = false;  // -t: the command runs on a terminal
};

// A running exec's connection to the client.
struct ExecStreams {
  // Output as it comes: 1 stdout (everything, on a terminal), 2 stderr.
  std::function<void(int channel, std::string_view data)> output;
  // -i: the client's input, one piece per call; false at its end, or soon
  // after `stop` is set. Empty without -i.
  std::function<bool(std::string* data, const std::atomic<bool>& stop)> read_input;
};

// Where exec requests go: the cluster's kubelets.
struct ExecHandler {
  // Whether the container is there and running: the refusal's message
  // otherwise ("container not found", "pod is not running").
  std::function<absl::Status(const ExecRequest&)> check;
  // Runs the command to its end with `streams` (called from any thread),
  // and returns its exit code.
  std::function<absl::StatusOr<int>(const ExecRequest&, const ExecStreams& streams)> run;
  explicit operator bool() const { return check && run; }
};

class ApiServer {
 public:
  ApiServer(ObjectStore& store, ApiServerOptions options);
  ~ApiServer();

  // Binds `host`:`port` (0: a free port) and returns the port.
  absl::StatusOr<int> Bind(const std::string& host, int port);
  // Serves until Stop(); returns at once when Bind failed.
  void Serve();
  void Stop();

  // Fault injection: ends every open watch stream now (clients resume).
  void DropWatches();
  // Fault injection: failures and stalls for the next requests.
  FaultInjector& faults() { return faults_; }
  // What containers printed, served as pods/log.
  PodLogs& logs() { return logs_; }
  // pods/exec runs commands through `handler` (pod_exec.cc); without one,
  // exec is refused.
  void SetExecHandler(ExecHandler handler);

 private:
  // Converts requests for older versions of resource.k8s.io and their
  // answers (dra_versions.h) around HandleStored.
  void Handle(const httplib::Request& req, httplib::Response& res);
  void HandleStored(const httplib::Request& req, httplib::Response& res);
  // /debug/k8shazgpu-sim/...: faults, dropped watches and container output
  // set over HTTP, for tests in other processes.
  void HandleDebug(const std::vector<std::string>& parts, const httplib::Request& req,
                   httplib::Response& res);
  // An injected fault for this request: stalls, then true when it answered.
  bool InjectFault(const std::string& verb, const std::string& resource, httplib::Response& res);
  bool Denied(const std::string& verb, const Route& route, httplib::Response& res) const;

  void HandleList(const ResourceType& type, const Route& route, const httplib::Request& req,
                  httplib::Response& res);
  void HandleWatch(const ResourceType& type, const Route& route, const httplib::Request& req,
                   httplib::Response& res);
  void HandleWrite(const std::string& verb, const ResourceType& type, const Route& route,
                   const httplib::Request& req, httplib::Response& res);
  void HandlePatch(const ResourceType& type, const Route& route, const httplib::Request& req,
                   httplib::Response& res);
  void HandleDelete(const std::string& verb, const ResourceType& type, const Route& route,
                    const nlohmann::json& body, const httplib::Request& req,
                    httplib::Response& res);
  void HandleLog(const Route& route, const httplib::Request& req, httplib::Response& res);
  void HandleExec(const Route& route, const httplib::Request& req, httplib::Response& res);
  // deployments/scale and replicasets/scale (scale_requests.cc).
  void HandleScale(const std::string& verb, const ResourceType& type, const Route& route,
                   const httplib::Request& req, httplib::Response& res);
  // 200 with `objects` (one or a List), as a Table when the client asks
  // for one (table.h).
  void ReplyRead(const ResourceType& type, const httplib::Request& req, httplib::Response& res,
                 const nlohmann::json& objects);
  // The CustomResourceDefinition of a custom kind (its printer columns);
  // null for a built-in one.
  nlohmann::json CrdOf(const ResourceType& type) const;

  ObjectStore& store_;
  ApiServerOptions options_;
  FaultInjector faults_;
  PodLogs logs_;
  Mutex exec_mu_;
  ExecHandler exec_ ABSL_GUARDED_BY(exec_mu_);
  std::unique_ptr<httplib::Server> server_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> watch_epoch_{0};
};

}  // namespace canhazgpu::kubesim
