#include "git/testing/trickle_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/strings.h"

namespace canhazgpu::git::testing {

TrickleServer::TrickleServer(std::chrono::milliseconds gap) : gap_(gap) {
  listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
  listen(listener_, 16);
  acceptor_ = std::thread([this] { Accept(); });
}

TrickleServer::~TrickleServer() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  shutdown(listener_, SHUT_RDWR);  // ends the accept
  acceptor_.join();
  for (std::thread& t : servers_) t.join();
  close(listener_);
}

std::string TrickleServer::Url(std::string_view path) const {
  return StrCat("http://127.0.0.1:", port_, "/", std::string(path));
}

void TrickleServer::WaitForClients(int count) {
  MutexLock lock(mu_);
  cv_.wait(lock, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return clients_ >= count; });
}

void TrickleServer::Accept() {
  while (true) {
    const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) return;
    MutexLock lock(mu_);
    if (stop_) {
      close(client);
      return;
    }
    ++clients_;
    cv_.notify_all();
    servers_.emplace_back([this, client] { Serve(client); });
  }
}

void TrickleServer::Serve(int client) {
  MutexLock lock(mu_);
  // A valid start of a response, then one more byte of a header that never
  // ends.
  if (gap_.count() > 0) {
    const std::string start = "HTTP/1.1 200 OK\r\nX-Slow: ";
    send(client, start.data(), start.size(), MSG_NOSIGNAL);
  }
  while (!cv_.wait_for(lock, gap_.count() > 0 ? gap_ : std::chrono::hours(1),
                       [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; })) {
    if (gap_.count() > 0) send(client, "a", 1, MSG_NOSIGNAL);
  }
  close(client);
}

}  // namespace canhazgpu::git::testing
