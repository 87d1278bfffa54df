// PeerCheckedListener: the listening half of a gRPC server on a unix socket,
// kept by us rather than by gRPC so that each connection's peer is checked
// before gRPC reads a byte of it. Whoever can call the DRA plugin can
// unprepare any pod's claim and so take its GPU; the kubelet, its only
// client, runs as root.
//
// Why not in gRPC: gRPC 1.51's C++ server shows a handler only the peer
// string ("unix:..."), no uid; an AuthMetadataProcessor and the server
// interceptors see metadata, not the socket; and it binds its sockets with
// the process's umask (0777 under umask 000). SO_PEERCRED is on the socket
// alone. So we bind the socket ourselves (its mode set before and after
// bind), accept on a thread of our own, read each peer's credentials, and
// hand the connections of root and of this process's own user (who could
// ptrace the daemon anyway) to the server with grpc::AddInsecureChannelFromFd.
// Anyone else's connection is closed at once, with a log line.
//
// Ownership: the server must outlive the listener; the socket file is the
// caller's to remove. Threading: one accept thread; Stop is thread-safe.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "core/log.h"
#include "grpcpp/server.h"

namespace canhazgpu::kubeletplugin {

// Whether a peer with user id `uid` may call a server of ours.
bool IsTrustedPeer(uid_t uid);

class PeerCheckedListener {
 public:
  // Binds a unix socket at `path` (which must be free: PrepareSocketPath)
  // with permission bits exactly `mode`, and serves its trusted peers'
  // connections with `server`, which must be started. `log` gets one line
  // per refused connection.
  static absl::StatusOr<std::unique_ptr<PeerCheckedListener>> Start(const std::string& path,
                                                                    mode_t mode,
                                                                    grpc::Server& server, Log log);

  // Stops if still running.
  ~PeerCheckedListener();
  PeerCheckedListener(const PeerCheckedListener&) = delete;
  PeerCheckedListener& operator=(const PeerCheckedListener&) = delete;

  // Stops accepting and closes the listening socket; connections already
  // handed over stay the server's. Idempotent.
  void Stop();

 private:
  PeerCheckedListener(std::string path, int listen_fd, int wake_fd, grpc::Server& server, Log log);
  void AcceptLoop();
  // Hands `fd` to the server or closes it.
  void Admit(int fd);

  const std::string path_;
  const int listen_fd_;
  const int wake_fd_;  // an eventfd: written by Stop to end AcceptLoop's poll
  grpc::Server& server_;
  const Log log_;
  std::once_flag stopped_;
  std::thread thread_;
};

}  // namespace canhazgpu::kubeletplugin
