#include "kubeletplugin/peer_checked_listener.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/strings.h"
#include "grpcpp/server_posix.h"

namespace canhazgpu::kubeletplugin {
namespace {

// Connections the kernel holds for us between accepts.
constexpr int kBacklog = 128;
// How long the accept loop waits when out of descriptors (EMFILE): another
// accept would fail the same way at once.
constexpr int kOutOfDescriptorsWaitMs = 100;

absl::Status SocketError(const char* what, const std::string& path) {
  return absl::ErrnoToStatus(errno, StrCat("cannot ", what, " unix socket ", path));
}

// A listening socket at `path` that is never more open than `mode`: bind
// gives the file the socket inode's mode less the umask, so the inode is
// narrowed first (fchmod works on an unbound socket on Linux) and the file
// set to exactly `mode` once it exists.
absl::StatusOr<int> BindListeningSocket(const std::string& path, mode_t mode) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(StrCat("socket path ", path, " is too long"));
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return SocketError("create", path);
  auto failed = [&](const char* what) {
    absl::Status s = SocketError(what, path);
    ::close(fd);
    return s;
  };
  if (::fchmod(fd, mode) != 0) return failed("set the mode of");
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return failed("bind");
  }
  if (::chmod(path.c_str(), mode) != 0) return failed("set the mode of");
  if (::listen(fd, kBacklog) != 0) return failed("listen on");
  return fd;
}

}  // namespace

bool IsTrustedPeer(uid_t uid) { return uid == 0 || uid == ::geteuid(); }

absl::StatusOr<std::unique_ptr<PeerCheckedListener>> PeerCheckedListener::Start(
    const std::string& path, mode_t mode, grpc::Server& server, Log log) {
  absl::StatusOr<int> listen_fd = BindListeningSocket(path, mode);
  if (!listen_fd.ok()) return listen_fd.status();
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) {
    absl::Status s = SocketError("wait on", path);
    ::close(*listen_fd);
    return s;
  }
  std::unique_ptr<PeerCheckedListener> listener(
      new PeerCheckedListener(path, *listen_fd, wake_fd, server, std::move(log)));
  listener->thread_ = std::thread([raw = listener.get()] { raw->AcceptLoop(); });
  return listener;
}

PeerCheckedListener::PeerCheckedListener(std::string path, int listen_fd, int wake_fd,
                                         grpc::Server& server, Log log)
    : path_(std::move(path)),
      listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      server_(server),
      log_(std::move(log)) {}

PeerCheckedListener::~PeerCheckedListener() { Stop(); }

void PeerCheckedListener::Stop() {
  std::call_once(stopped_, [this] {
    const uint64_t one = 1;
    // An eventfd write of 1 cannot block or fail short of overflow.
    (void)!::write(wake_fd_, &one, sizeof(one));
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
    ::close(wake_fd_);
  });
}

void PeerCheckedListener::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{.fd = listen_fd_, .events = POLLIN, .revents = 0},
                     {.fd = wake_fd_, .events = POLLIN, .revents = 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      log_.Error(StrCat("stopped accepting on ", path_, ": ", std::strerror(errno)));
      return;
    }
    if (fds[1].revents != 0) return;  // Stop
    if (fds[0].revents == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Admit(fd);
    } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      // The connection stays queued; accepting again at once would spin.
      pollfd wake = {.fd = wake_fd_, .events = POLLIN, .revents = 0};
      if (::poll(&wake, 1, kOutOfDescriptorsWaitMs) > 0) return;
    }
    // EAGAIN, ECONNABORTED, EINTR: the next poll tells.
  }
}

void PeerCheckedListener::Admit(int fd) {
  ucred peer{};
  socklen_t size = sizeof(peer);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) {
    log_.Warning(StrCat("refused a connection on ", path_,
                        ": cannot read its peer's credentials: ", std::strerror(errno)));
    ::close(fd);
    return;
  }
  if (!IsTrustedPeer(peer.uid)) {
    log_.Warning(StrCat("refused a connection on ", path_, " from uid ", peer.uid, " (pid ",
                        peer.pid, "): only root may call the plugin"));
    ::close(fd);
    return;
  }
  // gRPC owns the descriptor from here, non-blocking as its poller wants.
  grpc::AddInsecureChannelFromFd(&server_, fd);
}

}  // namespace canhazgpu::kubeletplugin
