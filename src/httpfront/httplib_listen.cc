#include "httpfront/httplib_listen.h"

#include <sys/socket.h>

#include <memory>

namespace canhazgpu::httpfront {

int BindWithFullBacklog(httplib::Server& server, const std::string& host, int port) {
  // httplib tries each address of `host` in turn and closes the sockets it
  // could not bind: the last socket made is the one listening.
  auto listening = std::make_shared<int>(-1);
  server.set_socket_options([listening](socket_t sock) {
    httplib::default_socket_options(sock);
    *listening = sock;
  });
  int bound = -1;
  if (port == 0) {
    bound = server.bind_to_any_port(host);
  } else if (server.bind_to_port(host, port)) {
    bound = port;
  }
  server.set_socket_options(httplib::default_socket_options);
  if (bound < 0) return -1;
  // listen() on a listening socket only sets its backlog again.
  if (*listening >= 0) ::listen(*listening, SOMAXCONN);
  return bound;
}

}  // namespace canhazgpu::httpfront
