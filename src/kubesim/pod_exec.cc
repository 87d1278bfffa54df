// pods/exec over WebSocket, as `kubectl exec POD -- CMD` reaches it: the
// handshake is answered by hand (cpp-httplib has no upgrade), and what the
// command prints goes out as channel.k8s.io messages on the same socket,
// ending with the Status of its exit. The command runs where the pod runs,
// through the exec handler the cluster sets (the simulated kubelet).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>

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
  return {
      {"metadata", json::object()},
      {"status", "Failure"},
      {"message", StrCat("command terminated with non-zero exit code: error executing command [",
                         command, "], exit code ", *exit)},
      {"reason", "NonZeroExitCode"},
      {"details", {{"causes", {{{"reason", "ExitCode"}, {"message", std::to_string(*exit)}}}}}}};
}

// The socket of the connection `req` came on: the one whose far end is
// the client's address and near end the server's.
int ConnectionOf(const httplib::Request& req) {
  auto endpoint = [](const sockaddr_storage& a, std::string* host) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
      *host = text;
      return static_cast<int>(ntohs(in->sin_port));
    }
    if (a.ss_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
      *host = text;
      return static_cast<int>(ntohs(in6->sin6_port));
    }
    return -1;
  };
  for (int fd = 0; fd < 4096; ++fd) {
    sockaddr_storage peer{}, self{};
    socklen_t peer_size = sizeof(peer), self_size = sizeof(self);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) continue;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_size) != 0) continue;
    std::string peer_host, self_host;
    if (endpoint(peer, &peer_host) == req.remote_port && peer_host == req.remote_addr &&
        endpoint(self, &self_host) == req.local_port) {
      return fd;
    }
  }
  return -1;
}

// The next piece of the client's stdin (channel 0): false once the client
// closed it (v5's channel 255, a close message, the connection's end) or
// `stop` is set.
bool ReadInput(int connection, WebSocketReader& reader, std::string* data,
               const std::atomic<bool>& stop) {
  for (;;) {
    while (std::optional<WebSocketReader::Message> m = reader.Next()) {
      if (m->opcode == 0x8) return false;
      if (m->opcode != 0x2 || m->payload.empty()) continue;  // pings, text
      const int channel = static_cast<unsigned char>(m->payload[0]);
      if (channel == 255) return false;                      // v5: a stream of the client's closed
      if (channel != 0 || m->payload.size() == 1) continue;  // resizes
      *data = m->payload.substr(1);
      return true;
    }
    if (stop) return false;
    pollfd p{connection, POLLIN, 0};
    const int ready = poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    char buffer[16384];
    const ssize_t n = recv(connection, buffer, sizeof(buffer), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    reader.Feed(std::string_view(buffer, static_cast<size_t>(n)));
  }
}

// Runs the command when the response is written, and writes what it
// prints as channel frames, then its exit Status and a close. Reads input
// from `connection` when it is not -1.
httplib::ContentProvider ExecStream(ExecHandler exec, ExecRequest request, int connection) {
  return [exec = std::move(exec), request = std::move(request), connection](
             size_t, size_t, httplib::DataSink& sink) {
    Mutex write_mu;
    bool open = true;
    auto send = [&](const std::string& frame) {
      MutexLock lock(write_mu);
      open = open && sink.write(frame.data(), frame.size());
    };
    ExecStreams streams;
    streams.output = [&](int channel, std::string_view data) { send(ChannelFrame(channel, data)); };
    WebSocketReader reader;
    if (connection >= 0) {
      streams.read_input = [&reader, connection](std::string* data, const std::atomic<bool>& stop) {
        return ReadInput(connection, reader, data, stop);
      };
    }
    absl::StatusOr<int> exit = exec.run(request, streams);
    send(ChannelFrame(3, ExitStatus(request.argv, exit).dump()));
    send(CloseFrame());
    return false;
  };
}

}  // namespace

void ApiServer::SetExecHandler(ExecHandler handler) {
  MutexLock lock(exec_mu_);
  exec_ = std::move(handler);
}

void ApiServer::HandleExec(const Route& route, const httplib::Request& req,
                           httplib::Response& res) {
  ExecHandler exec;
  {
    MutexLock lock(exec_mu_);
    exec = exec_;
  }
  if (!exec) {
    return Fail(res, BadExec("this simulated API server runs no pods: exec needs "
                             "`k8shazgpu-sim cluster`"));
  }
  const bool input = BoolParam(req, "stdin");
  int connection = -1;
  if (input) {
    // Input arrives on the upgraded connection, which cpp-httplib does not
    // hand over: it is found by its addresses, and read as plain bytes.
    if (!options_.tls_cert_pem.empty()) {
      return Fail(res, BadExec("exec with -i needs the simulated cluster's plain-HTTP API server; "
                               "run kubectl exec without -i and -t here"));
    }
    connection = ConnectionOf(req);
    if (connection < 0) return Fail(res, BadExec("cannot find the connection to read input from"));
  }
  ExecRequest request{.ns = route.ns,
                      .pod = route.name,
                      .container = Param(req, "container"),
                      .tty = BoolParam(req, "tty")};
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
  const std::string protocol =
      ChooseChannelProtocol(req.get_header_value("Sec-WebSocket-Protocol"));
  if (protocol.empty()) {
    return Fail(res, BadExec("exec speaks the v5.channel.k8s.io and v4.channel.k8s.io "
                             "subprotocols only"));
  }
  KeepUncompressed(req);
  res.status = 101;
  res.set_header("Upgrade", "websocket");
  res.set_header("Connection", "Upgrade");
  res.set_header("Sec-WebSocket-Accept",
                 WebSocketAccept(req.get_header_value("Sec-WebSocket-Key")));
  res.set_header("Sec-WebSocket-Protocol", protocol);
  // A length no stream reaches: the provider writes the frames raw (no
  // chunking) and ends the connection by returning false.
  res.set_content_provider(size_t{1} << 62, "application/octet-stream",
                           ExecStream(std::move(exec), std::move(request), connection));
}

}  // namespace canhazgpu::kubesim
