#include "cacheagent/fetchers.h"

#include <system_error>

#include "absl/strings/ascii.h"
#include "cacheplan/image_ref.h"
#include "core/strings.h"
#include "cri/ensure_image.h"
#include "cri/registry_auth.h"
#include "git/credentials.h"
#include "git/mirror.h"
#include "hfcache/download.h"
#include "hfcache/model_ref.h"

namespace canhazgpu::cacheagent {
namespace {

std::string SecretName(const cacheplan::CacheItem& item) {
  if (!item.pull_secret) return "";
  return StrCat(item.pull_secret->namespace_name, "/", item.pull_secret->name);
}

// host[:port] of a URL, lowercased, without user information.
std::string Authority(std::string_view url) {
  std::string_view rest = url;
  if (size_t scheme = url.find("://"); scheme != std::string_view::npos) {
    rest = url.substr(scheme + 3);
    rest = rest.substr(0, rest.find_first_of("/?#"));
  } else {
    rest = rest.substr(0, rest.find(':'));  // scp-like host:path
  }
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) rest.remove_prefix(at + 1);
  return absl::AsciiStrToLower(absl::string_view(rest.data(), rest.size()));
}

}  // namespace

std::string SourceServer(const cacheplan::CacheItem& item, std::string_view hf_endpoint) {
  if (item.type == cacheplan::kGitRepo && item.git_repo) return Authority(item.git_repo->url);
  if (item.type == cacheplan::kHfModel) return Authority(hf_endpoint);
  if (item.type == cacheplan::kImage && item.image) {
    absl::StatusOr<cacheplan::ImageRef> ref = cacheplan::ParseImageRef(item.image->ref);
    if (ref.ok()) return ref->registry;
  }
  return "";
}

int64_t FolderBytes(const std::filesystem::path& dir) {
  std::error_code ec;
  int64_t total = 0;
  std::filesystem::recursive_directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code ignored;
    if (it->is_regular_file(ignored) && !it->is_symlink(ignored)) {
      uintmax_t size = it->file_size(ignored);
      if (!ignored) total += static_cast<int64_t>(size);
    }
  }
  return total;
}

std::filesystem::path ItemFolder(const std::filesystem::path& cache_root,
                                 const cacheplan::CacheItem& item) {
  if (item.type == cacheplan::kGitRepo && item.git_repo) {
    return GitRoot(cache_root) / git::MirrorDirName(item.git_repo->url);
  }
  if (item.type == cacheplan::kHfModel && item.hf_model) {
    return HfRoot(cache_root) / hfcache::RepoFolderName(item.hf_model->repo_id);
  }
  return {};
}

absl::StatusOr<FetchResult> FetchImage(const FetchRequest& request) {
  const cacheplan::CacheItem& item = *request.item;
  if (request.images == nullptr) {
    return absl::FailedPreconditionError(
        "no container runtime configured on this node (k8shazgpu-node --cri-socket)");
  }
  absl::StatusOr<cacheplan::ImageRef> ref = cacheplan::ParseImageRef(item.image->ref);
  if (!ref.ok()) return ref.status();
  std::optional<cri::RegistryAuth> auth;
  if (request.secret) {
    if (absl::Status allowed =
            CheckCredentialRegistry(SecretName(item), request.secret->hosts, ref->registry);
        !allowed.ok()) {
      return allowed;
    }
    absl::StatusOr<std::optional<cri::RegistryAuth>> found = cri::AuthFromPullSecret(
        SecretName(item), request.secret->type, request.secret->data, ref->registry);
    if (!found.ok()) return found.status();
    auth = *found;
  }
  if (request.progress) request.progress(0, 0);
  cri::ImageInfo image;
  int64_t pulled = 0;
  if (request.refresh) {
    absl::StatusOr<std::string> id = request.images->Pull(item.image->ref, auth);
    if (!id.ok()) return id.status();
    absl::StatusOr<std::optional<cri::ImageInfo>> status = request.images->Status(item.image->ref);
    if (!status.ok()) return status.status();
    if (!*status) {
      return absl::InternalError(
          StrCat("the runtime pulled ", item.image->ref, " but does not list it"));
    }
    image = **status;
    pulled = static_cast<int64_t>(image.size);
  } else {
    absl::StatusOr<cri::EnsuredImage> ensured =
        cri::EnsureImage(*request.images, item.image->ref, auth);
    if (!ensured.ok()) return ensured.status();
    image = ensured->image;
    if (ensured->pulled) pulled = static_cast<int64_t>(image.size);
  }
  FetchResult result;
  result.digest = image.repo_digests.empty() ? image.id : image.repo_digests.front();
  if (auto at = result.digest.find('@'); at != std::string::npos) {
    result.digest = result.digest.substr(at + 1);
  }
  result.size_bytes = static_cast<int64_t>(image.size);
  result.bytes_pulled = pulled;
  return result;
}

absl::StatusOr<FetchResult> FetchGitRepo(const FetchRequest& request) {
  const cacheplan::CacheItem& item = *request.item;
  const cacheplan::GitRepoSource& source = *item.git_repo;
  std::optional<git::GitCredentials> credentials;
  if (request.secret) {
    if (absl::Status allowed = CheckCredentialUrl(SecretName(item), request.secret->hosts,
                                                  source.url, request.credentials);
        !allowed.ok()) {
      return allowed;
    }
    absl::StatusOr<git::GitCredentials> read =
        git::CredentialsFromSecretData(SecretName(item), request.secret->data);
    if (!read.ok()) return read.status();
    credentials = *read;
  }
  absl::StatusOr<git::Mirror> mirror =
      git::Mirror::OpenOrCreate(GitRoot(request.cache_root), source.url, *request.clock);
  if (!mirror.ok()) return mirror.status();
  // A pinned commit already in the mirror needs no network.
  bool need_fetch = request.refresh || !mirror->LastFetch().has_value() || source.commit.empty() ||
                    !mirror->HasCommit(source.commit);
  const int64_t before = FolderBytes(mirror->path());
  if (need_fetch) {
    git::FetchOptions options;
    options.credentials = credentials ? &*credentials : nullptr;
    options.cancel = request.cancel;
    options.limits = request.git_limits;
    if (request.progress) {
      options.progress = [&](const git::FetchProgress& p) {
        request.progress(static_cast<int64_t>(p.received_bytes), 0);
      };
    }
    if (absl::Status fetched = mirror->Fetch(options); !fetched.ok()) return fetched;
  }
  std::string rev = !source.commit.empty()   ? source.commit
                    : !source.branch.empty() ? source.branch
                                             : "HEAD";
  absl::StatusOr<std::string> commit = mirror->Resolve(rev);
  if (!commit.ok()) return commit.status();
  FetchResult result;
  result.commit = *commit;
  result.size_bytes = FolderBytes(mirror->path());
  result.bytes_pulled = std::max<int64_t>(0, result.size_bytes - before);
  return result;
}

absl::StatusOr<FetchResult> FetchHfModel(const FetchRequest& request) {
  const cacheplan::CacheItem& item = *request.item;
  const cacheplan::HfModelSource& source = *item.hf_model;
  hfcache::ModelRef ref;
  ref.repo_id = source.repo_id;
  if (!source.revision.empty()) ref.revision = source.revision;
  ref.allow_patterns = source.allow_patterns;
  hfcache::DownloadOptions options;
  options.endpoint = request.hf_endpoint;
  options.cache_root = HfRoot(request.cache_root);
  options.recheck_revision = request.refresh;
  options.clock = request.clock;
  if (request.secret) {
    if (absl::Status allowed = CheckCredentialUrl(SecretName(item), request.secret->hosts,
                                                  request.hf_endpoint, request.credentials);
        !allowed.ok()) {
      return allowed;
    }
    for (const char* key : {"token", "HF_TOKEN", "password"}) {
      auto it = request.secret->data.find(key);
      if (it != request.secret->data.end()) {
        options.token = it->second;
        break;
      }
    }
    if (options.token.empty()) {
      return absl::InvalidArgumentError(
          StrCat("secret ", SecretName(item), " has no 'token' key for the Hugging Face token"));
    }
  }
  int64_t pulled_from = -1;
  int64_t last_done = 0;
  hfcache::ProgressFn progress = [&](uint64_t done, uint64_t total) {
    if (pulled_from < 0) pulled_from = static_cast<int64_t>(done);
    last_done = static_cast<int64_t>(done);
    if (request.progress) request.progress(static_cast<int64_t>(done), static_cast<int64_t>(total));
  };
  absl::StatusOr<hfcache::ModelSnapshot> snapshot =
      hfcache::Download(ref, options, progress, request.cancel);
  if (!snapshot.ok()) return snapshot.status();
  FetchResult result;
  result.commit = snapshot->commit;
  result.revision = ref.revision;
  result.size_bytes = static_cast<int64_t>(snapshot->size_bytes);
  result.bytes_pulled = pulled_from < 0 ? 0 : std::max<int64_t>(0, last_done - pulled_from);
  return result;
}

absl::StatusOr<FetchResult> Fetch(const FetchRequest& request) {
  const cacheplan::CacheItem& item = *request.item;
  if (item.type == cacheplan::kImage && item.image) return FetchImage(request);
  if (item.type == cacheplan::kGitRepo && item.git_repo) return FetchGitRepo(request);
  if (item.type == cacheplan::kHfModel && item.hf_model) return FetchHfModel(request);
  return absl::InvalidArgumentError(
      StrCat("item ", item.name, " has type '", item.type, "' without its settings"));
}

}  // namespace canhazgpu::cacheagent
