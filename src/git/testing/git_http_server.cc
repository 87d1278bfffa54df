#include "git/testing/git_http_server.h"

#include <httplib.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "core/strings.h"
#include "git/testing/command.h"
#include "httpfront/httplib_listen.h"

namespace canhazgpu::git::testing {
namespace {

// One pkt-line: four hex digits of the length (itself included), then data.
std::string PktLine(const std::string& data) {
  char length[5];
  std::snprintf(length, sizeof(length), "%04zx", data.size() + 4);
  return StrCat(length, data);
}

std::vector<std::string> UploadPack(const std::filesystem::path& dir, bool advertise) {
  std::vector<std::string> argv = {"env", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
                                   "git", "upload-pack",           "--stateless-rpc"};
  if (advertise) argv.push_back("--advertise-refs");
  argv.push_back(dir.string());
  return argv;
}

}  // namespace

GitHttpServer::GitHttpServer(std::filesystem::path root, Options options)
    : root_(std::move(root)), options_(std::move(options)) {
  if (options_.tls_certificate.empty()) {
    server_ = std::make_unique<httplib::Server>();
  } else {
    server_ = std::make_unique<httplib::SSLServer>(options_.tls_certificate.c_str(),
                                                   options_.tls_key.c_str());
  }
  server_->Get(
      R"(/(.+)/info/refs)", [this](const httplib::Request& request, httplib::Response& response) {
        std::filesystem::path dir;
        if (!FindRepository(request, response, &dir)) return;
        if (request.get_param_value("service") != "git-upload-pack") {
          response.status = 403;  // dumb HTTP and pushes are not served
          return;
        }
        CommandResult result = RunCommand(UploadPack(dir, /*advertise=*/true));
        if (result.exit_code != 0) {
          response.status = 500;
          response.set_content(result.err, "text/plain");
          return;
        }
        response.set_header("Cache-Control", "no-cache");
        response.set_content(StrCat(PktLine("# service=git-upload-pack\n"), "0000", result.out),
                             "application/x-git-upload-pack-advertisement");
      });

  server_->Post(R"(/(.+)/git-upload-pack)", [this](const httplib::Request& request,
                                                   httplib::Response& response) {
    std::filesystem::path dir;
    if (!FindRepository(request, response, &dir)) return;
    CommandResult result = RunCommand(UploadPack(dir, /*advertise=*/false), request.body);
    if (result.exit_code != 0) {
      response.status = 500;
      response.set_content(result.err, "text/plain");
      return;
    }
    response.set_header("Cache-Control", "no-cache");
    response.set_content(result.out, "application/x-git-upload-pack-result");
  });

  port_ = canhazgpu::httpfront::BindWithFullBacklog(*server_, "127.0.0.1", 0);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // bind_to_any_port already listens: early connections wait in the backlog.
}

bool GitHttpServer::FindRepository(const httplib::Request& request, httplib::Response& response,
                                   std::filesystem::path* dir) {
  requests_.fetch_add(1);
  if (request.has_header("Authorization")) with_credentials_.fetch_add(1);
  if (!options_.redirect_to.empty()) {
    std::string target = options_.redirect_to + request.path;
    if (const size_t query = request.target.find('?'); query != std::string::npos) {
      target += request.target.substr(query);
    }
    response.set_redirect(target, 302);
    return false;
  }
  if (!options_.required_token.empty()) {
    std::string header = request.get_header_value("Authorization");
    std::string decoded;
    bool ok = absl::StartsWith(header, "Basic ") &&
              absl::Base64Unescape(header.substr(6), &decoded) &&
              decoded.find(':') != std::string::npos &&
              decoded.substr(decoded.find(':') + 1) == options_.required_token;
    if (!ok) {
      unauthorized_.fetch_add(1);
      response.status = 401;
      response.set_header("WWW-Authenticate", "Basic realm=\"git\"");
      response.set_content("authentication required\n", "text/plain");
      return false;
    }
  }
  const std::string relative = request.matches[1];
  if (relative.find("..") != std::string::npos ||
      !std::filesystem::is_directory(root_ / relative)) {
    response.status = 404;
    response.set_content("no such repository\n", "text/plain");
    return false;
  }
  *dir = root_ / relative;
  return true;
}

GitHttpServer::~GitHttpServer() {
  server_->stop();
  thread_.join();
}

std::string GitHttpServer::Url(std::string_view relative) const {
  return StrCat(options_.tls_certificate.empty() ? "http" : "https", "://127.0.0.1:", port_, "/",
                std::string(relative));
}

void MakeSelfSignedCertificate(const std::filesystem::path& dir) {
  CommandResult result = RunCommand(
      {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
       "-keyout", (dir / "key.pem").string(), "-out", (dir / "cert.pem").string(), "-days", "1",
       "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"});
  if (result.exit_code != 0) {
    std::fprintf(stderr, "openssl failed: %s\n", result.err.c_str());
    std::abort();
  }
}

}  // namespace canhazgpu::git::testing
