#include "httpfront/http_front.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/strings/ascii.h"
#include "core/strings.h"
#include "httpfront/client_table.h"
#include "httpfront/http_request_frame.h"

namespace canhazgpu::httpfront {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Deadlines are checked this often, and a paused accept is retried.
constexpr auto kSweep = std::chrono::milliseconds(100);

std::string ShownAddress(const std::string& host, int port) {
  return StrCat(host.find(':') != std::string::npos ? StrCat("[", host, "]") : host, ":", port);
}

void SetNoDelay(int fd) {
  // httplib writes the headers and the body in separate calls; without
  // TCP_NODELAY Nagle and delayed ACKs cost 40 ms per keep-alive request.
  int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

}  // namespace

namespace {

struct Connection {
  int fd = -1;
  std::string client;  // the identity it is counted under (client_identity.h)
  std::string remote_ip;
  int remote_port = 0;
  std::string local_ip;
  int local_port = 0;
  std::string in;        // received, not yet answered
  std::string out;       // answered, not yet sent
  size_t sent = 0;       // of `out`
  bool closing = false;  // close once `out` is sent
  bool peer_done = false;
  uint32_t watched = EPOLLIN | EPOLLRDHUP;
  SteadyClock::time_point deadline;
};

}  // namespace

struct HttpFront::Shared {
  Shared(int listen, FrontLimits front_limits, ExchangeHandler exchange, IdentifyClient identity)
      : listen_fd(listen),
        limits(front_limits),
        handler(std::move(exchange)),
        identify(std::move(identity)),
        clients(limits.max_client_connections, limits.max_connections) {}

  int listen_fd = -1;
  int stop_fd = -1;  // an eventfd, readable once stopped; never drained
  FrontLimits limits;
  ExchangeHandler handler;
  IdentifyClient identify;
  ClientTable clients;
};

namespace {

// One epoll loop; owns the connections it accepted.
class Loop {
 public:
  explicit Loop(HttpFront::Shared& shared) : s_(shared) {}
  ~Loop() {
    for (auto& [fd, c] : conns_) Close(*c, /*erase=*/false);
    if (epoll_ >= 0) close(epoll_);
  }

  absl::Status Init() {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) return absl::InternalError(StrCat("epoll: ", std::strerror(errno)));
    epoll_event stop{.events = EPOLLIN, .data = {.fd = s_.stop_fd}};
    epoll_ctl(epoll_, EPOLL_CTL_ADD, s_.stop_fd, &stop);
    WatchListener();
    return absl::OkStatus();
  }

  void Run() {
    std::vector<epoll_event> events(64);
    SteadyClock::time_point next_sweep = SteadyClock::now() + kSweep;
    for (;;) {
      const int n = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()),
                               static_cast<int>(kSweep.count()));
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == s_.stop_fd) return;
        if (fd == s_.listen_fd) {
          AcceptOne();
          continue;
        }
        auto it = conns_.find(fd);
        if (it == conns_.end()) continue;
        Connection& c = *it->second;
        if (events[i].events & EPOLLOUT) {
          if (Flush(c)) Serve(c);
        } else {
          OnReadable(c);
        }
      }
      const SteadyClock::time_point now = SteadyClock::now();
      if (now >= next_sweep) {
        Sweep(now);
        next_sweep = now + kSweep;
      }
    }
  }

 private:
  void WatchListener() {
    // Every loop is woken by a new connection (no EPOLLEXCLUSIVE) and each
    // takes one per wake-up, so a burst of connections is spread over the
    // loops instead of all landing on whichever woke first.
    epoll_event ev{.events = EPOLLIN, .data = {.fd = s_.listen_fd}};
    listening_ = epoll_ctl(epoll_, EPOLL_CTL_ADD, s_.listen_fd, &ev) == 0;
  }

  void AcceptOne() {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    int fd;
    do {
      fd = accept4(s_.listen_fd, reinterpret_cast<sockaddr*>(&addr), &len,
                   SOCK_NONBLOCK | SOCK_CLOEXEC);
    } while (fd < 0 && (errno == EINTR || errno == ECONNABORTED));
    if (fd >= 0) return Admit(fd, addr);
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      // Out of descriptors (or stopped): stop watching until the next
      // sweep, or the level-triggered listener would spin this loop.
      epoll_ctl(epoll_, EPOLL_CTL_DEL, s_.listen_fd, nullptr);
      listening_ = false;
    }
  }

  void Admit(int fd, const sockaddr_storage& addr) {
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->remote_ip = AddressOf(addr, &c->remote_port);
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
    c->local_ip = AddressOf(local, &c->local_port);
    c->client = s_.identify(fd, addr, local);
    const ClientTable::Verdict verdict = s_.clients.Acquire(c->client);
    if (verdict != ClientTable::Verdict::kAdmitted &&
        (verdict == ClientTable::Verdict::kOverClientCap || !TakeSlotFor(c->client))) {
      // Say so and close at once, without reading anything.
      const std::string busy = PlainAnswer(503, verdict == ClientTable::Verdict::kOverClientCap
                                                    ? "too many connections from this client"
                                                    : "too many connections");
      (void)!send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      return;
    }
    SetNoDelay(fd);
    c->deadline = SteadyClock::now() + s_.limits.request_deadline;
    epoll_event ev{.events = EPOLLIN | EPOLLRDHUP, .data = {.fd = fd}};
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
    conns_.emplace(fd, std::move(c));
  }

  // Every connection is taken: closes, for `client`, the longest waiting
  // connection of a client holding at least two more (ClientTable::Donor).
  // Only this loop's own connections are looked at, so no loop touches
  // another's; new connections are spread over the loops, so a client
  // holding many has some in each.
  bool TakeSlotFor(const std::string& client) {
    std::vector<std::string> candidates;
    for (const auto& [fd, c] : conns_) {
      if (c->out.empty()) candidates.push_back(c->client);  // waiting, not answering
    }
    const std::string donor = s_.clients.Donor(client, candidates);
    if (donor.empty()) return false;
    Connection* victim = nullptr;
    for (const auto& [fd, c] : conns_) {
      if (c->client == donor && c->out.empty() &&
          (victim == nullptr || c->deadline < victim->deadline)) {
        victim = c.get();
      }
    }
    if (victim == nullptr || !s_.clients.Transfer(donor, client)) return false;
    Close(*victim, /*erase=*/true, /*release=*/false);
    return true;
  }

  void OnReadable(Connection& c) {
    char buf[16384];
    const size_t cap = s_.limits.max_head_bytes + s_.limits.max_body_bytes;
    for (;;) {
      const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        if (c.in.size() > cap) break;  // Serve() answers 413/431
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) c.peer_done = true;
      break;
    }
    Serve(c);
  }

  // Answers every whole request received so far, in order, as long as each
  // answer goes out at once; the rest waits for EPOLLOUT.
  void Serve(Connection& c) {
    while (c.out.empty()) {
      const RequestFrame frame =
          FrameRequest(c.in, s_.limits.max_head_bytes, s_.limits.max_body_bytes);
      if (frame.kind == RequestFrame::kIncomplete) {
        if (c.peer_done) Close(c);
        return;
      }
      if (frame.kind == RequestFrame::kBad) {
        c.out = PlainAnswer(frame.status, frame.why);
        c.closing = true;
      } else {
        const Exchange ex{.request = std::string_view(c.in).substr(0, frame.size),
                          .fd = c.fd,
                          .remote_ip = c.remote_ip,
                          .remote_port = c.remote_port,
                          .local_ip = c.local_ip,
                          .local_port = c.local_port};
        Answer answer = s_.handler(ex);
        c.in.erase(0, frame.size);
        c.out = std::move(answer.bytes);
        c.closing = answer.close || (c.peer_done && c.in.empty());
      }
      c.deadline = SteadyClock::now() + s_.limits.write_deadline;
      if (!Flush(c)) return;
    }
  }

  // Sends what it can; false once the connection is closed.
  bool Flush(Connection& c) {
    while (c.sent < c.out.size()) {
      const ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n > 0) {
        c.sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        Watch(c, EPOLLOUT);
        return true;
      }
      Close(c);
      return false;
    }
    c.out.clear();
    c.sent = 0;
    if (c.closing) {
      Close(c);
      return false;
    }
    Watch(c, EPOLLIN | EPOLLRDHUP);
    c.deadline = SteadyClock::now() + s_.limits.request_deadline;
    return true;
  }

  void Watch(Connection& c, uint32_t events) {
    if (c.watched == events) return;
    c.watched = events;
    epoll_event ev{.events = events, .data = {.fd = c.fd}};
    epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
  }

  // `release`: false when the connection's place was handed to another
  // client (TakeSlotFor), which the table has already counted.
  void Close(Connection& c, bool erase = true, bool release = true) {
    const int fd = c.fd;
    if (release) s_.clients.Release(c.client);
    close(fd);  // also leaves the epoll set
    if (erase) conns_.erase(fd);
  }

  void Sweep(SteadyClock::time_point now) {
    std::vector<int> expired;
    for (const auto& [fd, c] : conns_) {
      if (now >= c->deadline) expired.push_back(fd);
    }
    for (int fd : expired) Close(*conns_.at(fd));
    if (!listening_) WatchListener();
  }

  HttpFront::Shared& s_;
  int epoll_ = -1;
  bool listening_ = false;
  std::unordered_map<int, std::unique_ptr<Connection>> conns_;
};

}  // namespace

absl::StatusOr<int> ListenTcp(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return absl::InvalidArgumentError(
        StrCat(ShownAddress(host, port), ": ", absl::AsciiStrToLower(gai_strerror(rc))));
  }
  int err = 0;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    // SO_REUSEADDR lets a restarted server bind while old connections sit in
    // TIME_WAIT; no SO_REUSEPORT (httplib's default), which let a second
    // server bind the same port and silently share its connections.
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    SetNoDelay(fd);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      err = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(
        StrCat(ShownAddress(host, port), ": ", absl::AsciiStrToLower(std::strerror(err))));
  }
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  int port = -1;
  AddressOf(addr, &port);
  return port;
}

namespace {

FrontLimits Clamped(FrontLimits limits) {
  // Keep connections under the descriptor limit, with room for the store.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    const int room = static_cast<int>(std::min<rlim_t>(files.rlim_cur, 1 << 20)) - 64;
    limits.max_connections = std::max(1, std::min(limits.max_connections, room));
  }
  limits.loops = std::max(1, limits.loops);
  return limits;
}

}  // namespace

HttpFront::HttpFront(int listen_fd, FrontLimits limits, ExchangeHandler handler,
                     IdentifyClient identify)
    : shared_(std::make_unique<Shared>(listen_fd, Clamped(limits), std::move(handler),
                                       std::move(identify))) {
  shared_->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

HttpFront::~HttpFront() {
  if (shared_->listen_fd >= 0) close(shared_->listen_fd);
  if (shared_->stop_fd >= 0) close(shared_->stop_fd);
}

void HttpFront::Stop() {
  // New connections are refused at once; the loops see the eventfd.
  shutdown(shared_->listen_fd, SHUT_RDWR);
  const uint64_t one = 1;
  (void)!write(shared_->stop_fd, &one, sizeof one);
}

absl::Status HttpFront::Run() {
  if (shared_->stop_fd < 0) return absl::InternalError(StrCat("eventfd: ", std::strerror(errno)));
  std::vector<std::unique_ptr<Loop>> loops;
  for (int i = 0; i < shared_->limits.loops; ++i) {
    loops.push_back(std::make_unique<Loop>(*shared_));
    if (absl::Status s = loops.back()->Init(); !s.ok()) return s;
  }
  std::vector<std::thread> threads;
  for (auto& loop : loops) threads.emplace_back([&loop] { loop->Run(); });
  for (std::thread& t : threads) t.join();
  return absl::OkStatus();
}

}  // namespace canhazgpu::httpfront
