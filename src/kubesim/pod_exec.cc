// pods/exec over WebSocket, as `kubectl exec POD -- CMD` reaches it: the
// handshake is answered by hand (cpp-httplib has no upgrade), and what the
// command prints goes out as channel.k8s.io messages on the same socket,
// ending with the Status of its exit. The command runs where the pod runs,
// through the exec handler the cluster sets (the simulated kubelet).
#include "core/strings.h"
#include "kube/json_object.h"
#include "kubesim/api_server.h"
#include "kubesim/http_common.h"
#include "kubesim/websocket.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

kube::ApiStatus BadExec(const std::string& message) { return kube::BadRequestStatus(message); }

// The final Status of the error stream: kubectl exits with the command's
// code when it is NonZeroExitCode.
json ExitStatus(const std::vector<std::string>& argv, absl::StatusOr<int> exit) {
  if (exit.ok() && *exit == 0) return {{"metadata", json::object()}, {"status", "Success"}};
  if (!exit.ok()) {
    return {{"metadata", json::object()},
            {"status", "Failure"},
            {"message", std::string(exit.status().message())},
            {"reason", "InternalError"},
            {"code", 500}};
  }
  std::string command;
  for (const std::string& a : argv) command += StrCat(command.empty() ? "" : " ", a);
  return {{"metadata", json::object()},
          {"status", "Failure"},
          {"message", StrCat("command terminated with non-zero exit code: error executing command [",
                             command, "], exit code ", *exit)},
          {"reason", "NonZeroExitCode"},
          {"details", {{"causes", {{{"reason", "ExitCode"}, {"message", std::to_string(*exit)}}}}}}};
}

}  // namespace

void ApiServer::SetExecHandler(ExecHandler handler) {
  std::lock_guard lock(exec_mu_);
  exec_ = std::move(handler);
}

void ApiServer::HandleExec(const Route& route, const httplib::Request& req,
                           httplib::Response& res) {
  ExecHandler exec;
  {
    std::lock_guard lock(exec_mu_);
    exec = exec_;
  }
  if (!exec) {
    return Fail(res, BadExec("this simulated API server runs no pods: exec needs "
                             "`k8shazgpu-sim cluster`"));
  }
  if (BoolParam(req, "stdin") || BoolParam(req, "tty")) {
    return Fail(res, BadExec("the simulated cluster's exec takes no input and no terminal: run "
                             "kubectl exec without -i and -t"));
  }
  ExecRequest request{.ns = route.ns, .pod = route.name, .container = Param(req, "container")};
  for (size_t i = 0; i < req.get_param_value_count("command"); ++i)
    request.argv.push_back(req.get_param_value("command", i));
  if (request.argv.empty()) return Fail(res, BadExec("you must specify at least 1 command"));
  Outcome pod = store_.Get(*store_.FindType("", "v1", "pods"), route.ns, route.name);
  if (!pod.ok()) return Fail(res, *pod.error);
  if (request.container.empty()) {
    const json containers = pod.object.value("/spec/containers"_json_pointer, json::array());
    if (containers.size() == 1) request.container = kube::StringField(containers[0], "name");
  }
  // What a real kubelet refuses before it upgrades: no such container, or
  // one not running.
  if (absl::Status ready = exec.check(request); !ready.ok()) {
    return Fail(res, BadExec(std::string(ready.message())));
  }
  // kubectl tries WebSocket first and SPDY when that fails; only the first
  // is spoken here.
  const std::string upgrade = req.get_header_value("Upgrade");
  if (upgrade.empty()) return Fail(res, BadExec("Upgrade request required"));
  if (!absl::EqualsIgnoreCase(upgrade, "websocket")) {
    return Fail(res, BadExec("the simulated API server runs exec over WebSocket only (kubectl "
                             "1.30 or newer)"));
  }
  const std::string protocol = ChooseChannelProtocol(req.get_header_value("Sec-WebSocket-Protocol"));
  if (protocol.empty()) {
    return Fail(res, BadExec("exec speaks the v5.channel.k8s.io and v4.channel.k8s.io "
                             "subprotocols only"));
  }
  KeepUncompressed(req);
  res.status = 101;
  res.set_header("Upgrade", "websocket");
  res.set_header("Connection", "Upgrade");
  res.set_header("Sec-WebSocket-Accept", WebSocketAccept(req.get_header_value("Sec-WebSocket-Key")));
  res.set_header("Sec-WebSocket-Protocol", protocol);
  // A length no stream reaches: the provider writes the frames raw (no
  // chunking) and ends the connection by returning false.
  res.set_content_provider(
      size_t{1} << 62, "application/octet-stream",
      [exec = std::move(exec), request](size_t, size_t, httplib::DataSink& sink) {
        std::mutex write_mu;
        bool open = true;
        auto send = [&](const std::string& frame) {
          std::lock_guard lock(write_mu);
          open = open && sink.write(frame.data(), frame.size());
        };
        absl::StatusOr<int> exit = exec.run(request, [&](int channel, std::string_view data) {
          send(ChannelFrame(channel, data));
        });
        send(ChannelFrame(3, ExitStatus(request.argv, exit).dump()));
        send(CloseFrame());
        return false;
      });
}

}  // namespace canhazgpu::kubesim
