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

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/atomic_file.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "hfcache/blob_writer.h"
#include "hfcache/hub_api.h"
#include "hfcache/hub_http.h"

namespace canhazgpu::hfcache {
namespace fs = std::filesystem;
namespace {

std::string Getenv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

absl::Status SystemError(std::string_view what, const fs::path& path, int error) {
  return absl::UnavailableError(
      StrCat(std::string(what), " ", path.string(), ": ", strerror(error)));
}

// Holds the repository's lock file; others wait for it (polling, so a
// cancelled caller gives up promptly).
class RepoLock {
 public:
  static absl::StatusOr<std::unique_ptr<RepoLock>> Acquire(const fs::path& path,
                                                           const std::atomic<bool>* cancel,
                                                           const Clock& clock) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    const int fd = OpenFixedNameFile(path.string(), O_RDWR, 0644);
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
      clock.SleepFor(std::chrono::milliseconds(50));
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
        clock_(options.clock != nullptr ? *options.clock : RealClock()),
        cache_(options.cache_root, ref.repo_id, options.sync_blobs),
        http_(HubHttpSettings{.endpoint = TrimSlash(options.endpoint),
                              .token = options.token,
                              .connect_timeout = options.connect_timeout,
                              .api_timeout = options.api_timeout,
                              .stall_timeout = options.stall_timeout}) {}

  absl::StatusOr<ModelSnapshot> Run() {
    ASSIGN_OR_RETURN(std::unique_ptr<RepoLock> lock,
                     RepoLock::Acquire(cache_.LockPath(), cancel_, clock_));
    ASSIGN_OR_RETURN(RepoListing listing, FetchRevision(http_, ref_));
    ModelSnapshot snapshot{.repo_id = ref_.repo_id,
                           .commit = listing.commit,
                           .snapshot_dir = cache_.SnapshotDir(listing.commit)};
    for (const RepoFile& file : listing.files) {
      if (MatchesAllowPatterns(file.path, ref_.allow_patterns)) snapshot.files.push_back(file);
    }
    if (snapshot.files.empty()) {
      return absl::InvalidArgumentError(StrCat("no file of model ", ref_.repo_id, "@",
                                               ref_.revision, " matches the allow patterns [",
                                               absl::StrJoin(ref_.allow_patterns, ", "), "]"));
    }
    for (const RepoFile& file : snapshot.files) {
      total_ += file.size;
      if (BlobPresent(file)) finished_ += file.size;
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
    const MonoTime now = clock_.MonoNow();
    if (!force && now - last_report_ < options_.progress_interval) return;
    const uint64_t done = finished_ + current_;
    if (!force && done == last_reported_done_) return;
    last_report_ = now;
    last_reported_done_ = done;
    progress_(done, total_);
  }

  std::string FileName(const RepoFile& file) const {
    return StrCat("file ", file.path, " of model ", ref_.repo_id);
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
      return absl::CancelledError(StrCat("download of model ", ref_.repo_id,
                                         " cancelled; partial files kept for resuming"));
    }
    return status;
  }

  absl::Status FetchOnce(const std::string& commit, const RepoFile& file) {
    const fs::path incomplete = cache_.IncompletePath(file.hash);
    std::error_code ec;
    fs::create_directories(incomplete.parent_path(), ec);
    ASSIGN_OR_RETURN(std::unique_ptr<BlobWriter> writer,
                     BlobWriter::Open(incomplete, file.kind, file.size, options_.sync_blobs));
    const uint64_t resumed_from = writer->size();
    current_ = resumed_from;
    absl::Status status = Transfer(commit, file, *writer);
    current_ = 0;  // counted again by the next attempt, or as a finished file
    if (!status.ok()) return status;
    ASSIGN_OR_RETURN(const std::string digest, writer->Finish());
    if (digest != file.hash) {
      writer->Discard();
      if (resumed_from == file.size) {
        // A whole partial file left by an earlier run that does not verify:
        // fetch it again rather than fail.
        return absl::UnavailableError(
            StrCat(FileName(file), ": a leftover partial file did not verify; fetching again"));
      }
      return absl::DataLossError(
          StrCat(FileName(file), ": the downloaded bytes hash to ", digest, " but the Hub lists ",
                 file.hash, "; nothing kept — retry, and tell the model's owners if it repeats"));
    }
    if (options_.sync_blobs) RETURN_IF_ERROR(writer->Sync());
    const fs::path blob = cache_.BlobPath(file.hash);
    if (rename(incomplete.c_str(), blob.c_str()) != 0) {
      return SystemError("cannot rename into", blob, errno);
    }
    finished_ += file.size;
    return absl::OkStatus();
  }

  // Fetches the rest of `file` into `writer`.
  absl::Status Transfer(const std::string& commit, const RepoFile& file, BlobWriter& writer) {
    if (writer.size() == file.size) return absl::OkStatus();
    const uint64_t offset = writer.size();
    absl::Status own_error;  // why a callback stopped the transfer
    FetchCallbacks callbacks;
    callbacks.on_start = [&](int status, const std::map<std::string, std::string>& headers) {
      if (offset == 0) return true;
      if (status == 206) {
        const auto range = headers.find("content-range");
        if (range != headers.end() && range->second.starts_with(StrCat("bytes ", offset, "-"))) {
          return true;
        }
        own_error = absl::UnavailableError(
            StrCat(FileName(file), ": asked for bytes from ", offset, ", the server sent \"",
                   range != headers.end() ? range->second : "no Content-Range", "\""));
        return false;
      }
      // The server ignored the range: start the file over.
      own_error = writer.Restart();
      current_ = 0;
      return own_error.ok();
    };
    callbacks.on_data = [&](std::string_view bytes) {
      if (writer.size() + bytes.size() > file.size) {
        writer.Discard();
        own_error =
            absl::DataLossError(StrCat(FileName(file), ": the server sent more than the ",
                                       file.size, " bytes the Hub lists; nothing kept, retry"));
        return false;
      }
      own_error = writer.Append(bytes);
      current_ = writer.size();
      Report(/*force=*/false);
      return own_error.ok();
    };
    callbacks.on_tick = [&] {
      if (Cancelled()) return false;
      Report(/*force=*/false);
      return true;
    };
    const size_t slash = ref_.repo_id.find('/');
    const std::string path = StrCat("/", http_.Escape(ref_.repo_id.substr(0, slash)), "/",
                                    http_.Escape(ref_.repo_id.substr(slash + 1)), "/resolve/",
                                    commit, "/", EscapePath(file.path));
    absl::StatusOr<HubResponse> response = http_.Fetch(path, offset, callbacks);
    if (!own_error.ok()) return own_error;
    if (!response.ok()) {
      if (Cancelled()) {
        return absl::CancelledError(StrCat("download of model ", ref_.repo_id,
                                           " cancelled; partial files kept for resuming"));
      }
      return absl::UnavailableError(StrCat(FileName(file), ": ", response.status().message(), " (",
                                           writer.size(), " of ", file.size,
                                           " bytes kept for resuming)"));
    }
    if (response->status == 416) {  // our range is past the server's end
      writer.Discard();
      return absl::UnavailableError(StrCat(FileName(file), ": range refused; restarting"));
    }
    if (response->status < 200 || response->status >= 300) {
      return HubError(*response, ref_, !options_.token.empty(), StrCat("file ", file.path));
    }
    if (writer.size() != file.size) {
      return absl::UnavailableError(StrCat(FileName(file), ": the transfer ended after ",
                                           writer.size(), " of ", file.size, " bytes"));
    }
    return absl::OkStatus();
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
  const Clock& clock_;
  RepoCache cache_;
  HubHttp http_;
  uint64_t total_ = 0;
  uint64_t finished_ = 0;  // bytes of the files verified (or found) so far
  uint64_t current_ = 0;   // bytes on disk of the file being fetched
  uint64_t last_reported_done_ = ~uint64_t{0};
  MonoTime last_report_;
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
