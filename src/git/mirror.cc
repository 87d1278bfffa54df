#include "git/mirror.h"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "core/file_write.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "git/file_lock.h"

namespace canhazgpu::git {
namespace {

namespace fs = std::filesystem;

constexpr char kUrlKey[] = "remote.origin.url";
constexpr char kHeadsRefspec[] = "+refs/heads/*:refs/heads/*";
constexpr char kTagsRefspec[] = "+refs/tags/*:refs/tags/*";
constexpr char kLastFetchFile[] = "canhazgpu-last-fetch";
constexpr size_t kMaxReadableLength = 80;

fs::path LockPath(const fs::path& mirror) {
  return mirror.parent_path() / StrCat(".", mirror.filename().string(), ".lock");
}

std::string CreatingPrefix(const std::string& name) { return StrCat(".", name, ".creating-"); }

// Directories left by a creation that never reached its rename. Called with
// the mirror's lock held, so none of them is still being written.
void RemoveLeftoverCreations(const fs::path& root, const std::string& name) {
  std::error_code ec;
  const std::string prefix = CreatingPrefix(name);
  for (const fs::directory_entry& entry : fs::directory_iterator(root, ec)) {
    if (absl::StartsWith(entry.path().filename().string(), prefix)) {
      fs::remove_all(entry.path(), ec);
    }
  }
}

// Lock files and half-written packs from a fetch that died. Called with the
// mirror's lock held: no live fetch owns them, and libgit2 would otherwise
// refuse to update a ref whose .lock exists.
void RemoveStaleFetchFiles(const fs::path& mirror) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(mirror, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool stale_lock = absl::EndsWith(name, ".lock");
    const bool stale_pack =
        it->path().parent_path().filename() == "pack" &&
        (absl::StartsWith(name, "pack_git2_") || absl::StartsWith(name, "tmp_"));
    std::error_code ignored;
    if ((stale_lock || stale_pack) && it->is_regular_file(ignored)) fs::remove(it->path(), ignored);
  }
}

// The remote's settings are plain config values, for people running git in
// the mirror by hand; fetches pass their refspecs explicitly. libgit2 1.5
// leaks PCRE2 match data in every git_remote_lookup/git_remote_create (its
// config regex searches), which a long-running node agent must not do on
// every fetch, so neither is used.
absl::Status InitializeMirror(const fs::path& dir, const std::string& url) {
  git_repository* raw = nullptr;
  git_repository_init_options init = GIT_REPOSITORY_INIT_OPTIONS_INIT;
  init.flags = GIT_REPOSITORY_INIT_BARE | GIT_REPOSITORY_INIT_MKPATH;
  int code = git_repository_init_ext(&raw, dir.c_str(), &init);
  if (code < 0) return Error(code, StrCat("creating mirror ", dir.string()));
  Repository repository(raw);
  git_config* raw_config = nullptr;
  code = git_repository_config(&raw_config, repository.get());
  if (code < 0) return Error(code, StrCat("opening the configuration of ", dir.string()));
  Config config(raw_config);
  for (const auto& [key, value] : {std::pair<const char*, const char*>{kUrlKey, url.c_str()},
                                   {"remote.origin.fetch", kHeadsRefspec},
                                   {"remote.origin.tagOpt", "--tags"}}) {
    code = git_config_set_string(config.get(), key, value);
    if (code < 0) return Error(code, StrCat("configuring the remote ", url));
  }
  return absl::OkStatus();
}

// The URL the mirror at `repository` was made for, or an error when it is
// not a complete mirror (not bare, no URL).
absl::StatusOr<std::string> MirrorUrl(git_repository* repository) {
  if (!git_repository_is_bare(repository)) {
    return absl::FailedPreconditionError("not a bare repository");
  }
  git_config* raw = nullptr;
  int code = git_repository_config_snapshot(&raw, repository);
  if (code < 0) return Error(code, "reading the mirror's configuration");
  Config config(raw);
  const char* url = nullptr;
  code = git_config_get_string(&url, config.get(), kUrlKey);
  if (code < 0) return Error(code, "reading the mirror's URL");
  return std::string(url);
}

bool IsFullHex(std::string_view rev) {
  if (rev.size() != GIT_OID_HEXSZ) return false;
  for (char c : rev) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

struct FetchContext {
  CredentialSession session;
  const FetchOptions* options;
  bool cancelled = false;

  bool ShouldStop() {
    if (options->cancel != nullptr && options->cancel->load()) cancelled = true;
    return cancelled;
  }
};

int OnCredentials(git_credential** out, const char* url, const char* username_from_url,
                  unsigned int allowed_types, void* payload) {
  auto* context = static_cast<FetchContext*>(payload);
  if (context->ShouldStop()) return GIT_EUSER;
  return CredentialSession::AcquireCallback(out, url, username_from_url, allowed_types,
                                            &context->session);
}

int OnCertificate(git_cert* cert, int valid, const char* host, void* payload) {
  return CredentialSession::CertificateCallback(cert, valid, host,
                                                &static_cast<FetchContext*>(payload)->session);
}

int OnTransferProgress(const git_indexer_progress* stats, void* payload) {
  auto* context = static_cast<FetchContext*>(payload);
  if (context->ShouldStop()) return GIT_EUSER;
  if (context->options->progress) {
    context->options->progress(FetchProgress{.received_bytes = stats->received_bytes,
                                             .received_objects = stats->received_objects,
                                             .indexed_objects = stats->indexed_objects,
                                             .total_objects = stats->total_objects});
  }
  return 0;
}

int OnSidebandProgress(const char* /*text*/, int /*length*/, void* payload) {
  // The server's "Counting objects" messages come before any object: the
  // first chance to stop a fetch of a large repository.
  return static_cast<FetchContext*>(payload)->ShouldStop() ? GIT_EUSER : 0;
}

}  // namespace

std::string MirrorDirName(std::string_view url) {
  absl::string_view rest(url.data(), url.size());
  if (size_t scheme = rest.find("://"); scheme != absl::string_view::npos) {
    rest.remove_prefix(scheme + 3);
  }
  // user[:password]@ never reaches the file system.
  const size_t authority_end = rest.find('/');
  if (size_t at = rest.substr(0, authority_end).rfind('@'); at != absl::string_view::npos) {
    rest.remove_prefix(at + 1);
  }
  while (absl::ConsumeSuffix(&rest, "/")) {
  }
  absl::ConsumeSuffix(&rest, ".git");

  std::string readable;
  for (char c : rest) {
    const bool keep =
        absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    const char out = keep ? c : '-';
    if (out == '-' && !readable.empty() && readable.back() == '-') continue;
    readable.push_back(out);
  }
  if (readable.size() > kMaxReadableLength) readable.resize(kMaxReadableLength);
  // No leading dot (hidden, and "." or ".."), no dangling separators.
  size_t begin = readable.find_first_not_of(".-");
  readable = begin == std::string::npos ? std::string() : readable.substr(begin);
  while (!readable.empty() && (readable.back() == '-' || readable.back() == '.')) {
    readable.pop_back();
  }
  if (readable.empty()) readable = "repo";

  EnsureInitialized();
  git_oid hash;
  git_odb_hash(&hash, url.data(), url.size(), GIT_OBJECT_BLOB);
  return StrCat(readable, "-", ToHex(hash).substr(0, 8));
}

absl::StatusOr<Mirror> Mirror::OpenOrCreate(const fs::path& root, std::string_view url_view,
                                            const canhazgpu::Clock& clock) {
  EnsureInitialized();
  const std::string url(url_view);
  const std::string name = MirrorDirName(url);
  const fs::path path = root / name;
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) {
    return absl::UnavailableError(
        StrCat("creating the cache root ", root.string(), ": ", ec.message()));
  }
  ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(LockPath(path)));
  RemoveLeftoverCreations(root, name);

  if (fs::exists(path, ec)) {
    absl::StatusOr<Repository> existing = Open(path);
    absl::StatusOr<std::string> existing_url =
        existing.ok() ? MirrorUrl(existing->get()) : existing.status();
    if (existing_url.ok() && *existing_url == url) {
      return Mirror(path, url, *std::move(existing), &clock);
    }
    if (existing_url.ok()) {
      // Never take over another URL's mirror, however unlikely the clash.
      return absl::FailedPreconditionError(StrCat("the cache directory ", path.string(),
                                                  " holds the mirror of ", *existing_url,
                                                  ", not of ", url, "; move it away"));
    }
    // Not a complete mirror: it is only a cache, so start again.
    fs::remove_all(path, ec);
    if (ec) {
      return absl::UnavailableError(
          StrCat("removing the damaged mirror ", path.string(), ": ", ec.message()));
    }
  }

  static std::atomic<int> counter{0};
  const fs::path creating =
      root / StrCat(CreatingPrefix(name), getpid(), "-", counter.fetch_add(1));
  if (absl::Status status = InitializeMirror(creating, url); !status.ok()) {
    fs::remove_all(creating, ec);
    return status;
  }
  fs::rename(creating, path, ec);
  if (ec) {
    const std::string reason = ec.message();
    fs::remove_all(creating, ec);
    return absl::UnavailableError(
        StrCat("moving the new mirror into ", path.string(), ": ", reason));
  }
  ASSIGN_OR_RETURN(Repository repository, Open(path));
  return Mirror(path, url, std::move(repository), &clock);
}

absl::Status RemoveMirror(const fs::path& root, std::string_view url) {
  const fs::path path = root / MirrorDirName(url);
  std::error_code ec;
  if (!fs::exists(path, ec)) return absl::OkStatus();
  ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(LockPath(path)));
  fs::remove_all(path, ec);
  if (ec) {
    return absl::UnavailableError(
        StrCat("removing the mirror ", path.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status Mirror::Fetch(const FetchOptions& options) {
  if (options.cancel != nullptr && options.cancel->load()) {
    return absl::CancelledError(StrCat("fetch of ", url_, " cancelled"));
  }
  ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(LockPath(path_)));
  RemoveStaleFetchFiles(path_);

  // An anonymous remote: no config regex searches (see InitializeMirror).
  git_remote_create_options create = GIT_REMOTE_CREATE_OPTIONS_INIT;
  create.repository = repository_.get();
  create.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
  git_remote* raw = nullptr;
  int code = git_remote_create_with_opts(&raw, url_.c_str(), &create);
  if (code < 0) return Error(code, StrCat("setting up the fetch of ", url_));
  Remote remote(raw);
  char* specs[] = {const_cast<char*>(kHeadsRefspec), const_cast<char*>(kTagsRefspec)};
  const git_strarray refspecs = {specs, 2};

  FetchContext context{.session = CredentialSession(options.credentials, url_),
                       .options = &options};
  git_fetch_options fetch = GIT_FETCH_OPTIONS_INIT;
  fetch.callbacks.credentials = &OnCredentials;
  fetch.callbacks.certificate_check = &OnCertificate;
  fetch.callbacks.transfer_progress = &OnTransferProgress;
  fetch.callbacks.sideband_progress = &OnSidebandProgress;
  fetch.callbacks.payload = &context;
  fetch.prune = GIT_FETCH_PRUNE;
  fetch.update_fetchhead = 0;
  // Tags come through the explicit refspec, force-updated like branches.
  fetch.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
  TransferLimits limits = options.limits;
  limits.cancel = options.cancel;
  ScopedTransferLimits guard(limits);
  code = git_remote_fetch(remote.get(), &refspecs, &fetch, "canhazgpu fetch");
  if (context.cancelled) return absl::CancelledError(StrCat("fetch of ", url_, " cancelled"));
  if (std::optional<absl::Status> stopped = guard.Failure(); stopped && code < 0) {
    return absl::Status(stopped->code(), StrCat("fetching ", url_, ": ", stopped->message()));
  }
  if (std::optional<absl::Status> failure = context.session.Failure()) return *failure;
  if (code < 0) return Error(code, StrCat("fetching ", url_));

  const int64_t now = canhazgpu::ToEpochMillis(clock_->Now());
  return canhazgpu::WriteFileAtomically((path_ / kLastFetchFile).string(), StrCat(now, "\n"), 0644);
}

absl::StatusOr<std::string> Mirror::Resolve(std::string_view rev) const {
  if (IsFullHex(rev)) {
    ASSIGN_OR_RETURN(git_oid oid, ParseOid(rev));
    git_object* raw = nullptr;
    git_object* peeled = nullptr;
    if (git_object_lookup(&raw, repository_.get(), &oid, GIT_OBJECT_ANY) < 0) {
      return absl::NotFoundError(
          StrCat("commit ", std::string(rev), " is not in the mirror of ", url_, "; fetch first"));
    }
    Object object(raw);
    int code = git_object_peel(&peeled, object.get(), GIT_OBJECT_COMMIT);
    if (code < 0) {
      return absl::InvalidArgumentError(
          StrCat(std::string(rev), " in the mirror of ", url_, " is not a commit"));
    }
    Object commit(peeled);
    return ToHex(*git_object_id(commit.get()));
  }
  const std::string name(rev);
  std::vector<std::string> candidates;
  if (absl::StartsWith(name, "refs/")) {
    candidates = {name};
  } else {
    candidates = {StrCat("refs/heads/", name), StrCat("refs/tags/", name)};
  }
  for (const std::string& candidate : candidates) {
    git_reference* raw = nullptr;
    if (git_reference_lookup(&raw, repository_.get(), candidate.c_str()) < 0) continue;
    Reference reference(raw);
    git_object* peeled = nullptr;
    int code = git_reference_peel(&peeled, reference.get(), GIT_OBJECT_COMMIT);
    if (code < 0) return Error(code, StrCat("reading ", candidate, " of ", url_));
    Object commit(peeled);
    return ToHex(*git_object_id(commit.get()));
  }
  return absl::NotFoundError(StrCat("no branch or tag '", name, "' in the mirror of ", url_,
                                    "; fetch first, or give a full 40-digit commit id"));
}

bool Mirror::HasCommit(std::string_view hex) const {
  absl::StatusOr<git_oid> oid = ParseOid(hex);
  if (!oid.ok()) return false;
  git_commit* raw = nullptr;
  if (git_commit_lookup(&raw, repository_.get(), &*oid) < 0) return false;
  Commit commit(raw);
  return true;
}

std::optional<canhazgpu::TimePoint> Mirror::LastFetch() const {
  std::ifstream in(path_ / kLastFetchFile);
  std::string text;
  int64_t millis = 0;
  if (!std::getline(in, text) || !absl::SimpleAtoi(text, &millis)) return std::nullopt;
  return canhazgpu::FromEpochMillis(millis);
}

}  // namespace canhazgpu::git
