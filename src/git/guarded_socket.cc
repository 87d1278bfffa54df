#include "git/guarded_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <git2/sys/stream.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "core/clock.h"
#include "core/strings.h"

namespace canhazgpu::git {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

// Short enough that a cancel or a deadline is noticed at once, long enough
// to cost nothing while data flows.
constexpr std::chrono::milliseconds kSlice{200};

const TransferLimits kDefaultLimits;
thread_local const TransferLimits* tls_limits = nullptr;
thread_local std::optional<absl::Status> tls_failure;

const TransferLimits& Limits() { return tls_limits != nullptr ? *tls_limits : kDefaultLimits; }

// The first four members are laid out as libgit2's own socket stream
// (src/libgit2/streams/socket.h, unchanged from 1.4 to 1.6): its SSH
// transport takes the descriptor from that struct and hands it to libssh2,
// which then reads and writes it itself (so SSH gets the connect timeout
// and the cancel check of the handshake's socket, not the low-speed limit).
struct GuardedStream {
  git_stream parent;
  char* host = nullptr;
  char* port = nullptr;
  int fd = -1;  // `s` there
  // The low-speed window: bytes moved since it began.
  SteadyTime window_start{};
  int64_t window_bytes = 0;
};

int Fail(absl::Status status) {
  git_error_set_str(GIT_ERROR_NET, std::string(status.message()).c_str());
  tls_failure = std::move(status);
  return -1;
}

// Whether the transfer may go on waiting; sets the failure when not.
bool MayWait(GuardedStream& s, SteadyTime now, std::optional<SteadyTime> connect_by) {
  const TransferLimits& limits = Limits();
  const std::string where = StrCat(s.host, ":", s.port);
  if (limits.cancel != nullptr && limits.cancel->load()) {
    Fail(absl::CancelledError(StrCat("transfer from ", where, " cancelled")));
    return false;
  }
  if (limits.deadline && now >= *limits.deadline) {
    Fail(absl::DeadlineExceededError(StrCat("transfer from ", where, " stopped at its deadline")));
    return false;
  }
  if (connect_by && now >= *connect_by) {
    Fail(absl::DeadlineExceededError(StrCat("no connection to ", where, " within ",
                                            limits.connect_timeout.count() / 1000.0, " s")));
    return false;
  }
  if (!connect_by && now - s.window_start >= limits.low_speed_time) {
    const double seconds = std::chrono::duration<double>(limits.low_speed_time).count();
    const auto needed = static_cast<int64_t>(limits.low_speed_bytes_per_second * seconds);
    if (s.window_bytes < needed) {
      Fail(absl::DeadlineExceededError(StrCat(where, " moved ", s.window_bytes, " bytes in ",
                                              seconds, " s, under the low-speed limit of ",
                                              limits.low_speed_bytes_per_second,
                                              " bytes/s; giving up")));
      return false;
    }
    s.window_start = now;
    s.window_bytes = 0;
  }
  return true;
}

// Waits for `events` on the socket in slices; false when a limit ended it.
bool Await(GuardedStream& s, short events, std::optional<SteadyTime> connect_by = std::nullopt) {
  while (true) {
    pollfd p{.fd = s.fd, .events = events, .revents = 0};
    const int ready = poll(&p, 1, static_cast<int>(kSlice.count()));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) {
      Fail(absl::UnavailableError(StrCat("waiting on ", s.host, ": ", strerror(errno))));
      return false;
    }
    if (!MayWait(s, RealClock().MonoNow(), connect_by)) return false;
  }
}

int Connect(git_stream* stream) {
  auto& s = *reinterpret_cast<GuardedStream*>(stream);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(s.host, s.port, &hints, &found); rc != 0) {
    return Fail(absl::UnavailableError(
        StrCat("failed to resolve address for ", s.host, ": ", gai_strerror(rc))));
  }
  const SteadyTime connect_by = RealClock().MonoNow() + Limits().connect_timeout;
  std::string last_error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    s.fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (s.fd < 0) continue;
    if (connect(s.fd, a->ai_addr, a->ai_addrlen) == 0) break;
    if (errno == EINPROGRESS) {
      if (!Await(s, POLLOUT, connect_by)) {
        freeaddrinfo(found);
        close(s.fd);
        s.fd = -1;
        return -1;
      }
      int error = 0;
      socklen_t size = sizeof(error);
      getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &error, &size);
      if (error == 0) break;
      last_error = strerror(error);
    } else {
      last_error = strerror(errno);
    }
    close(s.fd);
    s.fd = -1;
  }
  freeaddrinfo(found);
  if (s.fd < 0) {
    return Fail(absl::UnavailableError(
        StrCat("failed to connect to ", s.host, ":", s.port, ": ", last_error)));
  }
  // Blocking again, as libgit2's own stream leaves it for libssh2; the
  // reads and writes here say MSG_DONTWAIT instead.
  fcntl(s.fd, F_SETFL, fcntl(s.fd, F_GETFL) & ~O_NONBLOCK);
  s.window_start = RealClock().MonoNow();
  return 0;
}

ssize_t Read(git_stream* stream, void* data, size_t size) {
  auto& s = *reinterpret_cast<GuardedStream*>(stream);
  while (true) {
    const ssize_t n = recv(s.fd, data, size, MSG_DONTWAIT);
    if (n >= 0) {
      s.window_bytes += n;
      // A trickle never lets the wait below time out: judge it here too.
      if (n > 0 && !MayWait(s, RealClock().MonoNow(), std::nullopt)) return -1;
      return n;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Fail(absl::UnavailableError(
          StrCat("error receiving data from ", s.host, ": ", strerror(errno))));
    }
    if (!Await(s, POLLIN)) return -1;
  }
}

ssize_t Write(git_stream* stream, const char* data, size_t size, int /*flags*/) {
  auto& s = *reinterpret_cast<GuardedStream*>(stream);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = send(s.fd, data + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      done += static_cast<size_t>(n);
      s.window_bytes += n;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Fail(
          absl::UnavailableError(StrCat("error sending data to ", s.host, ": ", strerror(errno))));
    }
    if (!Await(s, POLLOUT)) return -1;
  }
  return static_cast<ssize_t>(done);
}

int Close(git_stream* stream) {
  auto& s = *reinterpret_cast<GuardedStream*>(stream);
  if (s.fd >= 0) close(s.fd);
  s.fd = -1;
  return 0;
}

void Free(git_stream* stream) {
  auto* s = reinterpret_cast<GuardedStream*>(stream);
  free(s->host);
  free(s->port);
  delete s;
}

int NewStream(git_stream** out, const char* host, const char* port) {
  auto* s = new GuardedStream();
  s->parent.version = GIT_STREAM_VERSION;
  s->parent.connect = Connect;
  s->parent.read = Read;
  s->parent.write = Write;
  s->parent.close = Close;
  s->parent.free = Free;
  s->host = strdup(host);
  s->port = strdup(port);
  *out = &s->parent;
  return 0;
}

}  // namespace

void InstallGuardedSockets() {
  static std::once_flag once;
  std::call_once(once, [] {
    git_stream_registration registration{};
    registration.version = GIT_STREAM_VERSION;
    registration.init = NewStream;
    git_stream_register(GIT_STREAM_STANDARD, &registration);
  });
}

ScopedTransferLimits::ScopedTransferLimits(const TransferLimits& limits) : previous_(tls_limits) {
  tls_limits = &limits;
  tls_failure.reset();
}

ScopedTransferLimits::~ScopedTransferLimits() { tls_limits = previous_; }

std::optional<absl::Status> ScopedTransferLimits::Failure() const { return tls_failure; }

}  // namespace canhazgpu::git
