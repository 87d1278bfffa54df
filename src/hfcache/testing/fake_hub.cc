#include "hfcache/testing/fake_hub.h"

#include <fcntl.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/strings.h"
#include "hfcache/content_hash.h"
#include "httpfront/httplib_listen.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::hfcache::testing {
namespace {

// Big pieces keep the server from being the bottleneck in benchmarks.
constexpr size_t kPiece = 1 << 20;

std::string Quoted(std::string_view value) { return StrCat("\"", std::string(value), "\""); }

}  // namespace

struct FakeHub::File {
  std::string path;
  std::string content;
  std::string disk_path;
  bool lfs = false;
  uint64_t size = 0;
  std::string hash;  // what the listing says
};

struct FakeHub::Commit {
  std::string sha;
  std::vector<std::shared_ptr<const File>> files;
};

struct FakeHub::Repo {
  bool private_repo = false;
  bool gated = false;
  std::map<std::string, Commit> commits;
  std::map<std::string, std::string> refs;
};

FakeHub::FakeHub(std::string token) : token_(std::move(token)) {}

FakeHub::~FakeHub() { Stop(); }

absl::Status FakeHub::AddModel(FakeModel model) {
  Commit commit{.sha = model.commit};
  for (FakeFile& fake : model.files) {
    auto file = std::make_shared<File>();
    file->path = fake.path;
    file->lfs = fake.lfs;
    const HashKind kind = fake.lfs ? HashKind::kSha256 : HashKind::kGitBlobSha1;
    if (!fake.disk_path.empty()) {
      struct stat st;
      if (stat(fake.disk_path.c_str(), &st) != 0) {
        return absl::InvalidArgumentError(StrCat("cannot stat ", fake.disk_path));
      }
      file->disk_path = fake.disk_path;
      file->size = static_cast<uint64_t>(st.st_size);
      ContentHasher hasher(kind, file->size);
      if (absl::Status s = HashFilePrefix(fake.disk_path, file->size, hasher); !s.ok()) return s;
      file->hash = hasher.FinishHex();
    } else {
      file->content = std::move(fake.content);
      file->size = file->content.size();
      std::string listed = file->content;
      if (fake.wrong_hash) listed += "this is not what is served";
      ContentHasher hasher(kind, listed.size());
      hasher.Update(listed);
      file->hash = hasher.FinishHex();
    }
    if (fake.wrong_hash && !fake.disk_path.empty())
      file->hash[0] = file->hash[0] == '0' ? '1' : '0';
    commit.files.push_back(std::move(file));
  }
  MutexLock lock(mu_);
  std::unique_ptr<Repo>& repo = repos_[model.repo_id];
  if (repo == nullptr) repo = std::make_unique<Repo>();
  repo->private_repo = model.private_repo;
  repo->gated = model.gated;
  for (const std::string& revision : model.revisions) repo->refs[revision] = model.commit;
  repo->commits[model.commit] = std::move(commit);
  return absl::OkStatus();
}

absl::Status FakeHub::Start(int port) {
  server_ = std::make_unique<httplib::Server>();
  server_->Get(
      R"(/api/models/([^/]+)/([^/]+)/revision/(.+))",
      [this](const httplib::Request& req, httplib::Response& res) { HandleApi(req, res); });
  server_->Get(R"(/cdn/([0-9a-f]{64}))", [this](const httplib::Request& req,
                                                httplib::Response& res) { HandleCdn(req, res); });
  server_->Get(
      R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))",
      [this](const httplib::Request& req, httplib::Response& res) { HandleResolve(req, res); });
  // httplib answers 206 to any range request; a server ignoring ranges
  // answers 200.
  server_->set_post_routing_handler([this](const httplib::Request&, httplib::Response& res) {
    MutexLock lock(mu_);
    if (ignore_ranges_ && res.status == 206) res.status = 200;
  });
  port_ = httpfront::BindWithFullBacklog(*server_, "127.0.0.1", port);
  if (port_ <= 0) return absl::UnavailableError("fake hub: cannot listen on 127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // Connections queue from bind on; waiting for the loop only makes an
  // early Stop() reliable.
  while (!server_->is_running()) std::this_thread::yield();
  return absl::OkStatus();
}

void FakeHub::Stop() {
  Release();
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string FakeHub::endpoint() const { return StrCat("http://127.0.0.1:", port_); }

void FakeHub::CutNextBody(std::string_view file_path, uint64_t bytes) {
  MutexLock lock(mu_);
  hooks_[std::string(file_path)] = BodyHook{.bytes = bytes, .stall = false};
}

void FakeHub::StallNextBody(std::string_view file_path, uint64_t bytes) {
  MutexLock lock(mu_);
  hooks_[std::string(file_path)] = BodyHook{.bytes = bytes, .stall = true};
  released_ = false;
}

void FakeHub::IgnoreRanges(bool ignore) {
  MutexLock lock(mu_);
  ignore_ranges_ = ignore;
}

void FakeHub::Release() {
  MutexLock lock(mu_);
  released_ = true;
  released_cv_.notify_all();
}

std::string FakeHub::HashOf(std::string_view repo_id, std::string_view file_path) const {
  MutexLock lock(mu_);
  auto repo = repos_.find(std::string(repo_id));
  if (repo == repos_.end()) return "";
  for (const auto& [sha, commit] : repo->second->commits) {
    for (const auto& file : commit.files) {
      if (file->path == file_path) return file->hash;
    }
  }
  return "";
}

std::vector<RecordedRequest> FakeHub::requests() const {
  MutexLock lock(mu_);
  return requests_;
}

void FakeHub::ClearRequests() {
  MutexLock lock(mu_);
  requests_.clear();
}

void FakeHub::Record(const httplib::Request& req) {
  MutexLock lock(mu_);
  requests_.push_back(RecordedRequest{.method = req.method,
                                      .path = req.path,
                                      .authorization = req.get_header_value("Authorization"),
                                      .range = req.get_header_value("Range")});
}

bool FakeHub::Authorize(const httplib::Request& req, httplib::Response& res,
                        const Repo* repo) const {
  const bool has_token =
      !token_.empty() && req.get_header_value("Authorization") == StrCat("Bearer ", token_);
  if (repo == nullptr || (repo->private_repo && !has_token)) {
    // As the Hub: anonymous callers cannot tell missing from private.
    res.status = has_token ? 404 : 401;
    res.set_header("X-Error-Code", "RepoNotFound");
    res.set_content("Repository not found", "text/plain");
    return false;
  }
  if (repo->gated) {
    res.status = 403;
    res.set_header("X-Error-Code", "GatedRepo");
    res.set_content("Access to this model is restricted", "text/plain");
    return false;
  }
  return true;
}

const FakeHub::Commit* FakeHub::FindCommit(const Repo& repo, const std::string& revision) const {
  auto ref = repo.refs.find(revision);
  auto commit = repo.commits.find(ref != repo.refs.end() ? ref->second : revision);
  return commit != repo.commits.end() ? &commit->second : nullptr;
}

void FakeHub::HandleApi(const httplib::Request& req, httplib::Response& res) {
  Record(req);
  MutexLock lock(mu_);
  const std::string repo_id = StrCat(req.matches[1].str(), "/", req.matches[2].str());
  auto repo = repos_.find(repo_id);
  if (!Authorize(req, res, repo != repos_.end() ? repo->second.get() : nullptr)) return;
  const Commit* commit = FindCommit(*repo->second, req.matches[3].str());
  if (commit == nullptr) {
    res.status = 404;
    res.set_header("X-Error-Code", "RevisionNotFound");
    res.set_content("Invalid rev id", "text/plain");
    return;
  }
  const bool blobs = req.get_param_value("blobs") == "true";
  nlohmann::json siblings = nlohmann::json::array();
  for (const auto& file : commit->files) {
    nlohmann::json sibling = {{"rfilename", file->path}};
    if (blobs) {
      // For LFS files the Hub's blobId is the pointer file's (not served here).
      sibling["blobId"] = file->lfs ? std::string(40, 'e') : file->hash;
      sibling["size"] = file->size;
      if (file->lfs) {
        sibling["lfs"] = {{"sha256", file->hash}, {"size", file->size}, {"pointerSize", 134}};
      }
    }
    siblings.push_back(sibling);
  }
  const nlohmann::json doc = {{"_id", "0"},
                              {"id", repo_id},
                              {"modelId", repo_id},
                              {"sha", commit->sha},
                              {"private", repo->second->private_repo},
                              {"gated", repo->second->gated},
                              {"siblings", siblings}};
  res.set_content(doc.dump(), "application/json");
}

void FakeHub::HandleResolve(const httplib::Request& req, httplib::Response& res) {
  Record(req);
  std::shared_ptr<const File> found;
  {
    MutexLock lock(mu_);
    const std::string repo_id = StrCat(req.matches[1].str(), "/", req.matches[2].str());
    auto repo = repos_.find(repo_id);
    if (!Authorize(req, res, repo != repos_.end() ? repo->second.get() : nullptr)) return;
    const Commit* commit = FindCommit(*repo->second, req.matches[3].str());
    if (commit == nullptr) {
      res.status = 404;
      res.set_header("X-Error-Code", "RevisionNotFound");
      return;
    }
    res.set_header("X-Repo-Commit", commit->sha);
    for (const auto& file : commit->files) {
      if (file->path == req.matches[4].str()) found = file;
    }
  }
  if (found == nullptr) {
    res.status = 404;
    res.set_header("X-Error-Code", "EntryNotFound");
    return;
  }
  if (found->lfs) {
    res.set_header("ETag", Quoted(std::string(40, 'e')));
    res.set_header("X-Linked-Etag", Quoted(found->hash));
    res.set_header("X-Linked-Size", std::to_string(found->size));
    res.set_redirect(StrCat("/cdn/", found->hash, "?expires=never"), 302);
    return;
  }
  res.set_header("ETag", Quoted(found->hash));
  ServeBody(found, res);
}

void FakeHub::HandleCdn(const httplib::Request& req, httplib::Response& res) {
  Record(req);
  std::shared_ptr<const File> found;
  {
    MutexLock lock(mu_);
    for (const auto& [id, repo] : repos_) {
      for (const auto& [sha, commit] : repo->commits) {
        for (const auto& file : commit.files) {
          if (file->lfs && file->hash == req.matches[1].str()) found = file;
        }
      }
    }
  }
  if (found == nullptr) {
    res.status = 404;
    return;
  }
  res.set_header("ETag", Quoted(found->hash));
  ServeBody(found, res);
}

void FakeHub::ServeBody(const std::shared_ptr<const File>& file, httplib::Response& res) {
  std::optional<BodyHook> hook;
  {
    MutexLock lock(mu_);
    if (ignore_ranges_) {
      // Without a length httplib cannot slice a range: the whole body, 200.
      res.set_content_provider("application/octet-stream",
                               [file](size_t offset, httplib::DataSink& sink) {
                                 std::string bytes = file->content;
                                 if (!file->disk_path.empty()) {
                                   std::ifstream in(file->disk_path, std::ios::binary);
                                   bytes.assign(std::istreambuf_iterator<char>(in), {});
                                 }
                                 sink.write(bytes.data() + offset, bytes.size() - offset);
                                 sink.done();
                                 return true;
                               });
      return;
    }
    auto it = hooks_.find(file->path);
    if (it != hooks_.end()) {
      hook = it->second;
      hooks_.erase(it);
    }
  }
  int fd = -1;
  if (!file->disk_path.empty()) fd = open(file->disk_path.c_str(), O_RDONLY | O_CLOEXEC);
  auto sent = std::make_shared<uint64_t>(0);
  // One read buffer per response, not one per piece.
  auto buffer = std::make_shared<std::unique_ptr<char[]>>(fd >= 0 ? new char[kPiece] : nullptr);
  res.set_content_provider(
      file->size, "application/octet-stream",
      [this, file, hook, fd, sent, buffer](size_t offset, size_t length, httplib::DataSink& sink) {
        size_t n = std::min(length, kPiece);
        if (hook.has_value() && *sent < hook->bytes) n = std::min<uint64_t>(n, hook->bytes - *sent);
        if (hook.has_value() && *sent == hook->bytes) {
          if (!hook->stall) return false;  // cut: httplib closes the connection
          MutexLock lock(mu_);
          released_cv_.wait(lock,
                            [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return released_; });
        }
        if (fd >= 0) {
          const ssize_t got = pread(fd, buffer->get(), n, static_cast<off_t>(offset));
          if (got <= 0 || !sink.write(buffer->get(), static_cast<size_t>(got))) return false;
          *sent += static_cast<uint64_t>(got);
          return true;
        }
        if (!sink.write(file->content.data() + offset, n)) return false;
        *sent += n;
        return true;
      },
      [fd](bool) {
        if (fd >= 0) close(fd);
      });
}

}  // namespace canhazgpu::hfcache::testing
