// A local stand-in for the Hugging Face Hub, for tests and benchmarks: the
// revision API (/api/models/{repo}/revision/{rev}?blobs=true) and resolve
// endpoints (/{repo}/resolve/{rev}/{path}) for models described in memory or
// by files on disk. Large (LFS) files answer with a 302 to a CDN-like path on
// the same server (/cdn/<sha256>) and the Hub's headers (X-Repo-Commit,
// X-Linked-Etag, X-Linked-Size, ETag). Bodies honour Range requests. Private
// repositories require the hub's token (401 as the Hub, X-Error-Code
// RepoNotFound); gated ones answer 403. Hooks cut a body or stall it at a
// byte offset, and every request is recorded. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "core/mutex.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace canhazgpu::hfcache::testing {

struct FakeFile {
  std::string path;       // "config.json", "nested/dir/file.txt"
  std::string content;    // the bytes, unless disk_path is set
  std::string disk_path;  // serve this file's bytes instead (large files)
  bool lfs = false;       // listed with lfs.sha256 and served via /cdn/
  // Listed with the hash of other bytes than it serves: a corrupt download.
  bool wrong_hash = false;
};

struct FakeModel {
  std::string repo_id;  // "org/name"
  std::string commit;   // 40 hex
  // Named revisions pointing at this commit (default {"main"}).
  std::vector<std::string> revisions = {"main"};
  std::vector<FakeFile> files;
  bool private_repo = false;  // needs the hub's token
  bool gated = false;         // 403 whatever the token
};

struct RecordedRequest {
  std::string method;
  std::string path;           // decoded, without the query
  std::string authorization;  // the header, or empty
  std::string range;          // the header, or empty
};

class FakeHub {
 public:
  // `token`: what private models require as "Bearer <token>".
  explicit FakeHub(std::string token = "");
  ~FakeHub();
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  // Adds a commit of a model (a model may get several; named revisions
  // move to the latest added). Hashes files on disk; InvalidArgument when a
  // disk file cannot be read.
  absl::Status AddModel(FakeModel model);

  // Listens on 127.0.0.1:`port` (0: any free port) in a thread of its own.
  absl::Status Start(int port = 0);
  void Stop();  // releases stalls too; idempotent
  int port() const { return port_; }
  std::string endpoint() const;  // "http://127.0.0.1:PORT"

  // The next body served for `file_path` (any model) ends after `bytes`
  // bytes with the connection closed.
  void CutNextBody(std::string_view file_path, uint64_t bytes);
  // The next body served for `file_path` pauses after `bytes` bytes until
  // Release() (or Stop()).
  void StallNextBody(std::string_view file_path, uint64_t bytes);
  void Release();
  // Answers range requests with the whole body (200), as some servers and
  // proxies do.
  void IgnoreRanges(bool ignore);

  // The listed hash (sha256 or git blob sha1) of a served file.
  std::string HashOf(std::string_view repo_id, std::string_view file_path) const;

  std::vector<RecordedRequest> requests() const;
  void ClearRequests();

 private:
  struct File;
  struct Commit;
  struct Repo;
  struct BodyHook {
    uint64_t bytes = 0;
    bool stall = false;  // else cut
  };

  // Authorization check for a repo: true when the request may proceed.
  bool Authorize(const httplib::Request& req, httplib::Response& res, const Repo* repo) const;
  const Commit* FindCommit(const Repo& repo, const std::string& revision) const;
  void Record(const httplib::Request& req);
  void HandleApi(const httplib::Request& req, httplib::Response& res);
  void HandleResolve(const httplib::Request& req, httplib::Response& res);
  void HandleCdn(const httplib::Request& req, httplib::Response& res);
  void ServeBody(const std::shared_ptr<const File>& file, httplib::Response& res);

  std::string token_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;

  mutable Mutex mu_;
  std::condition_variable_any released_cv_;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
  bool ignore_ranges_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::unique_ptr<Repo>> repos_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, BodyHook> hooks_ ABSL_GUARDED_BY(mu_);  // by file path
  std::vector<RecordedRequest> requests_ ABSL_GUARDED_BY(mu_);
};

}  // namespace canhazgpu::hfcache::testing
