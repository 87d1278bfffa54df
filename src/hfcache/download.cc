#include "hfcache/download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "hfcache/content_hash.h"
#include "hfcache/hub_api.h"
#include "hfcache/hub_http.h"

namespace canhazgpu::hfcache {
namespace fs = std::filesystem;
namespace {

using SteadyClock = std::chrono::steady_clock;

std::string Getenv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

absl::Status SystemError(std::string_view what, const fs::path& path, int error) {
  return absl::UnavailableError(
      absl::StrCat(std::string(what), " ", path.string(), ": ", strerror(error)));
}

// Holds the repository's lock file; others wait for it (polling, so a
// cancelled caller gives up promptly).
class RepoLock {
 public:
  static absl::StatusOr<std::unique_ptr<RepoLock>> Acquire(const fs::path& path,
                                                           const std::atomic<bool>* cancel) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return SystemError("cannot open lock file", path, errno);
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        const int error = errno;
        close(fd);
        return SystemError("cannot lock", path, error);
      }
      if (cancel != nullptr && cancel->load()) {
        close(fd);
        return absl::CancelledError("download cancelled while another download of it ran");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return std::unique_ptr<RepoLock>(new RepoLock(fd));
  }
  ~RepoLock() { close(fd_); }  // closing releases the lock

 private:
  explicit RepoLock(int fd) : fd_(fd) {}
  int fd_;
};

// One Download call's state.
class Downloader {
 public:
  Downloader(const ModelRef& ref, const DownloadOptions& options, const ProgressFn& progress,
             const std::atomic<bool>* cancel)
      : ref_(ref),
        options_(options),
        progress_(progress),
        cancel_(cancel),
        cache_(options.cache_root, ref.repo_id),
        http_(HubHttpSettings{.endpoint = TrimSlash(options.endpoint),
                              .token = options.token,
                              .connect_timeout = options.connect_timeout,
                              .api_timeout = options.api_timeout,
                              .stall_timeout = options.stall_timeout}) {}

  absl::StatusOr<ModelSnapshot> Run() {
    ASSIGN_OR_RETURN(std::unique_ptr<RepoLock> lock, RepoLock::Acquire(cache_.LockPath(), cancel_));
    ASSIGN_OR_RETURN(RepoListing listing, FetchRevision(http_, ref_));
    ModelSnapshot snapshot{.repo_id = ref_.repo_id,
                           .commit = listing.commit,
                           .snapshot_dir = cache_.SnapshotDir(listing.commit)};
    for (const RepoFile& file : listing.files) {
      if (MatchesAllowPatterns(file.path, ref_.allow_patterns)) snapshot.files.push_back(file);
    }
    if (snapshot.files.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "no file of model ", ref_.repo_id, "@", ref_.revision, " matches the allow patterns [",
          absl::StrJoin(ref_.allow_patterns, ", "), "]"));
    }
    for (const RepoFile& file : snapshot.files) {
      total_ += file.size;
      if (BlobPresent(file)) done_ += file.size;
    }
    Report(/*force=*/true);
    for (const RepoFile& file : snapshot.files) {
      if (!BlobPresent(file)) RETURN_IF_ERROR(FetchBlob(listing.commit, file));
      RETURN_IF_ERROR(cache_.Link(listing.commit, file));
    }
    // The record first, the ref last: until the ref moves, readers keep
    // the previous complete commit.
    RETURN_IF_ERROR(cache_.WriteManifest(listing));
    if (ref_.revision != listing.commit) {
      RETURN_IF_ERROR(cache_.WriteRef(ref_.revision, listing.commit));
    }
    snapshot.size_bytes = total_;
    Report(/*force=*/true);
    return snapshot;
  }

 private:
  static std::string TrimSlash(std::string endpoint) {
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    return endpoint;
  }

  bool Cancelled() const { return cancel_ != nullptr && cancel_->load(); }

  bool BlobPresent(const RepoFile& file) const {
    std::error_code ec;
    const fs::path blob = cache_.BlobPath(file.hash);
    return fs::is_regular_file(blob, ec) && fs::file_size(blob, ec) == file.size && !ec;
  }

  void Report(bool force) {
    if (!progress_) return;
    const SteadyClock::time_point now = SteadyClock::now();
    if (!force && now - last_report_ < options_.progress_interval) return;
    if (!force && done_ == last_reported_done_) return;
    last_report_ = now;
    last_reported_done_ = done_;
    progress_(done_, total_);
  }

  std::string FileName(const RepoFile& file) const {
    return absl::StrCat("file ", file.path, " of model ", ref_.repo_id);
  }

  // Downloads one blob, resuming after broken transfers.
  absl::Status FetchBlob(const std::string& commit, const RepoFile& file) {
    absl::Status status;
    for (int attempt = 1; attempt <= std::max(1, options_.max_attempts); ++attempt) {
      if (Cancelled()) break;
      status = FetchOnce(commit, file);
      if (status.ok() || (!absl::IsUnavailable(status) && !absl::IsDeadlineExceeded(status))) {
        return status;
      }
    }
    if (Cancelled()) {
      return absl::CancelledError(absl::StrCat("download of model ", ref_.repo_id,
                                               " cancelled; partial files kept for resuming"));
    }
    return status;
  }

  absl::Status FetchOnce(const std::string& commit, const RepoFile& file) {
    const fs::path incomplete = cache_.IncompletePath(file.hash);
    std::error_code ec;
    fs::create_directories(incomplete.parent_path(), ec);
    const int fd = open(incomplete.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return SystemError("cannot write", incomplete, errno);
    absl::Status status = FetchInto(fd, incomplete, commit, file);
    close(fd);
    return status;
  }

  absl::Status FetchInto(int fd, const fs::path& incomplete, const std::string& commit,
                         const RepoFile& file) {
    struct stat st;
    if (fstat(fd, &st) != 0) return SystemError("cannot stat", incomplete, errno);
    uint64_t offset = static_cast<uint64_t>(st.st_size);
    auto hasher = std::make_unique<ContentHasher>(file.kind, file.size);
    if (offset > file.size || (offset > 0 && !HashFilePrefix(incomplete, offset, *hasher).ok())) {
      hasher = std::make_unique<ContentHasher>(file.kind, file.size);
      offset = 0;
    }
    if (ftruncate(fd, static_cast<off_t>(offset)) != 0 ||
        lseek(fd, static_cast<off_t>(offset), SEEK_SET) < 0) {
      return SystemError("cannot write", incomplete, errno);
    }
    done_ += offset;
    uint64_t written = offset;
    absl::Status own_error;  // why a callback stopped the transfer
    if (offset < file.size) {
      FetchCallbacks callbacks;
      callbacks.on_start = [&](int status) {
        if (status == 206 || offset == 0) return true;
        // The server ignored the range: start the file over.
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) < 0) {
          own_error = SystemError("cannot write", incomplete, errno);
          return false;
        }
        hasher = std::make_unique<ContentHasher>(file.kind, file.size);
        done_ -= written;
        written = 0;
        return true;
      };
      callbacks.on_data = [&](std::string_view bytes) {
        if (written + bytes.size() > file.size) {
          own_error = absl::DataLossError(
              absl::StrCat(FileName(file), ": the server sent more than the ", file.size,
                           " bytes the Hub lists; nothing kept, retry"));
          return false;
        }
        hasher->Update(bytes);
        while (!bytes.empty()) {
          const ssize_t n = write(fd, bytes.data(), bytes.size());
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) {
            own_error = absl::ResourceExhaustedError(
                absl::StrCat("cannot write ", incomplete.string(), ": ", strerror(errno),
                             " (is the cache disk full?)"));
            return false;
          }
          bytes.remove_prefix(static_cast<size_t>(n));
          written += static_cast<uint64_t>(n);
          done_ += static_cast<uint64_t>(n);
        }
        Report(/*force=*/false);
        return true;
      };
      callbacks.on_tick = [&] {
        if (Cancelled()) return false;
        Report(/*force=*/false);
        return true;
      };
      const std::string path =
          absl::StrCat("/", http_.Escape(ref_.repo_id.substr(0, ref_.repo_id.find('/'))), "/",
                       http_.Escape(ref_.repo_id.substr(ref_.repo_id.find('/') + 1)), "/resolve/",
                       commit, "/", EscapePath(file.path));
      absl::StatusOr<HubResponse> response = http_.Fetch(path, offset, callbacks);
      if (!own_error.ok()) {
        if (absl::IsDataLoss(own_error)) Discard(incomplete, written);
        return own_error;
      }
      if (!response.ok()) {
        if (Cancelled()) {
          return absl::CancelledError(absl::StrCat("download of model ", ref_.repo_id,
                                                   " cancelled; partial files kept for resuming"));
        }
        return absl::UnavailableError(absl::StrCat(FileName(file), ": ",
                                                   response.status().message(), " (", written,
                                                   " of ", file.size, " bytes kept for resuming)"));
      }
      if (response->status == 416) {  // our range is past the server's end
        Discard(incomplete, written);
        return absl::UnavailableError(absl::StrCat(FileName(file), ": range refused; restarting"));
      }
      if (response->status < 200 || response->status >= 300) {
        return HubError(*response, ref_, !options_.token.empty(), absl::StrCat("file ", file.path));
      }
      if (written != file.size) {
        return absl::UnavailableError(absl::StrCat(FileName(file), ": the transfer ended after ",
                                                   written, " of ", file.size, " bytes"));
      }
    }
    const std::string digest = hasher->FinishHex();
    if (digest != file.hash && offset == file.size) {
      // A partial file left whole by an earlier run that did not verify:
      // fetch it again rather than fail.
      Discard(incomplete, written);
      return absl::UnavailableError(
          absl::StrCat(FileName(file), ": a leftover partial file did not verify; fetching again"));
    }
    if (digest != file.hash) {
      Discard(incomplete, written);
      return absl::DataLossError(absl::StrCat(
          FileName(file), ": the downloaded bytes hash to ", digest, " but the Hub lists ",
          file.hash, "; nothing kept — retry, and tell the model's owners if it repeats"));
    }
    // Verified bytes reach the disk before they get the name that says so.
    if (fdatasync(fd) != 0) return SystemError("cannot sync", incomplete, errno);
    const fs::path blob = cache_.BlobPath(file.hash);
    if (rename(incomplete.c_str(), blob.c_str()) != 0) {
      return SystemError("cannot rename into", blob, errno);
    }
    return absl::OkStatus();
  }

  void Discard(const fs::path& incomplete, uint64_t written) {
    unlink(incomplete.c_str());
    done_ -= std::min(done_, written);
  }

  std::string EscapePath(const std::string& file_path) {
    std::vector<std::string> segments;
    for (absl::string_view segment : absl::StrSplit(file_path, '/')) {
      segments.push_back(http_.Escape(std::string_view(segment.data(), segment.size())));
    }
    return absl::StrJoin(segments, "/");
  }

  const ModelRef& ref_;
  const DownloadOptions& options_;
  const ProgressFn& progress_;
  const std::atomic<bool>* cancel_;
  RepoCache cache_;
  HubHttp http_;
  uint64_t total_ = 0;
  uint64_t done_ = 0;
  uint64_t last_reported_done_ = ~uint64_t{0};
  SteadyClock::time_point last_report_;
};

}  // namespace

DownloadOptions OptionsFromEnvironment() {
  DownloadOptions options;
  if (std::string endpoint = Getenv("HF_ENDPOINT"); !endpoint.empty()) options.endpoint = endpoint;
  options.token = Getenv("HF_TOKEN");
  if (options.token.empty()) options.token = Getenv("HUGGING_FACE_HUB_TOKEN");
  if (std::string cache = Getenv("HF_HUB_CACHE"); !cache.empty()) {
    options.cache_root = cache;
  } else if (std::string home = Getenv("HF_HOME"); !home.empty()) {
    options.cache_root = fs::path(home) / "hub";
  } else if (std::string user_home = Getenv("HOME"); !user_home.empty()) {
    options.cache_root = fs::path(user_home) / ".cache" / "huggingface" / "hub";
  }
  return options;
}

absl::StatusOr<ModelSnapshot> Download(const ModelRef& ref, const DownloadOptions& options,
                                       const ProgressFn& progress,
                                       const std::atomic<bool>* cancel) {
  RETURN_IF_ERROR(ValidateRepoId(ref.repo_id));
  RETURN_IF_ERROR(ValidateRevision(ref.revision));
  if (options.cache_root.empty()) {
    return absl::InvalidArgumentError("no model cache directory given (HF_HUB_CACHE)");
  }
  if (!options.recheck_revision || IsCommitHash(ref.revision)) {
    absl::StatusOr<ModelSnapshot> cached = FindCached(options.cache_root, ref);
    if (cached.ok()) {
      if (progress) progress(cached->size_bytes, cached->size_bytes);
      return cached;
    }
  }
  return Downloader(ref, options, progress, cancel).Run();
}

}  // namespace canhazgpu::hfcache
