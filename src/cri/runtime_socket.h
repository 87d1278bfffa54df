// Which container runtime socket the node talks to: the one given with
// --container-runtime-endpoint, else the first existing of the usual CRI
// sockets (containerd first, then CRI-O, then k3s and cri-dockerd).
// Stateless; thread-safe.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace canhazgpu::cri {

inline constexpr std::string_view kRuntimeEndpointFlag = "--container-runtime-endpoint";

// Looked for in this order. /var/run is usually a link to /run, so the
// /var/run entries only matter on hosts where it is not.
inline constexpr std::array<std::string_view, 6> kWellKnownRuntimeSockets = {
    "/run/containerd/containerd.sock",     "/run/crio/crio.sock",
    "/var/run/containerd/containerd.sock", "/var/run/crio/crio.sock",
    "/run/k3s/containerd/containerd.sock", "/run/cri-dockerd.sock",
};

struct RuntimeSocket {
  std::string path;  // a filesystem path, without "unix://"
  // How it was chosen, for the log: "given with --container-runtime-endpoint"
  // or "found /run/crio/crio.sock (first existing of the usual CRI sockets)".
  std::string reason;

  // "unix:///run/crio/crio.sock": how the kubelet and crictl spell it.
  std::string Endpoint() const { return "unix://" + path; }
};

// "unix:///x.sock" or "/x.sock" -> "/x.sock"; InvalidArgument for another
// scheme (tcp://, npipe://) or a relative path.
absl::StatusOr<std::string> SocketPathOfEndpoint(std::string_view endpoint);

// `flag` (the value of kRuntimeEndpointFlag) when not empty, whether or not
// it exists yet: the runtime may start after us. Otherwise the first of
// kWellKnownRuntimeSockets that is a socket under `root` ("" on a real
// node; a temporary directory in tests; the returned path includes it).
// NotFound, listing where it looked and naming the flag, when none is.
absl::StatusOr<RuntimeSocket> FindRuntimeSocket(std::string_view flag, std::string_view root = "");

}  // namespace canhazgpu::cri
