// Test-only: a git smart-HTTP server on 127.0.0.1 (cpp-httplib) serving the
// repositories under a root directory, read-only. It bridges
// GET <repo>/info/refs?service=git-upload-pack and POST <repo>/git-upload-pack
// to `git upload-pack --stateless-rpc [--advertise-refs] DIR`, the way
// git-http-backend does, so libgit2 fetches from it as from a real forge.
// Optionally every request must carry HTTP Basic authentication whose
// password is a given token (401 with WWW-Authenticate otherwise), and
// optionally it answers every request with a redirect elsewhere; it counts
// the requests that carried a credential at all. Optionally it speaks HTTPS with a given
// certificate (see MakeSelfSignedCertificate, made with the `openssl` command).
//
// Thread safety: requests are served on the server's threads; the counters
// may be read from any thread.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace canhazgpu::git::testing {

class GitHttpServer {
 public:
  struct Options {
    std::string required_token;  // empty: no authentication
    // PEM files: serve HTTPS with this certificate (Url() then says https).
    std::filesystem::path tls_certificate;
    std::filesystem::path tls_key;
    // Non-empty: every request is answered 302 to this base URL plus the
    // request's path and query (a moved repository, or a hostile server).
    std::string redirect_to;
  };

  // Starts serving `root` on a free port; returns once it accepts.
  explicit GitHttpServer(std::filesystem::path root, Options options = {});
  ~GitHttpServer();
  GitHttpServer(const GitHttpServer&) = delete;
  GitHttpServer& operator=(const GitHttpServer&) = delete;

  // http(s)://127.0.0.1:PORT/<relative>: the URL of root/<relative>.
  std::string Url(std::string_view relative) const;
  int port() const { return port_; }

  int requests() const { return requests_.load(); }
  int unauthorized() const { return unauthorized_.load(); }
  // Requests with an Authorization header, right or wrong.
  int with_credentials() const { return with_credentials_.load(); }

 private:
  // Every request: counts it, checks authentication and maps the path to a
  // repository in `*dir`. False when `response` is already the answer.
  bool FindRepository(const httplib::Request& request, httplib::Response& response,
                      std::filesystem::path* dir);

  std::filesystem::path root_;
  Options options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<int> unauthorized_{0};
  std::atomic<int> with_credentials_{0};
};

// Writes a self-signed certificate for localhost and 127.0.0.1 and its key (P-256, one
// day) into `dir` as cert.pem and key.pem, with the `openssl` command.
// Aborts when openssl fails.
void MakeSelfSignedCertificate(const std::filesystem::path& dir);

}  // namespace canhazgpu::git::testing
