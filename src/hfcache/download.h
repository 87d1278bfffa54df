// Downloading a Hugging Face model revision into the Hub cache layout
// (hub_cache.h): the revision resolved to a commit through the revision API,
// the selected files streamed to blobs/<hash>.incomplete while hashed,
// verified, renamed into place and linked from snapshots/<commit>/, then the
// completion record and refs/<revision> written. Interrupted transfers
// resume with a Range request, within a call (max_attempts) and across
// calls (the .incomplete file stays). Blocking: call it from a worker
// thread. Concurrent calls are safe; calls for the same repository, in this
// or another process, take turns (a lock file in the repository's folder).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "core/clock.h"
#include "hfcache/hub_cache.h"
#include "hfcache/model_ref.h"

namespace canhazgpu::hfcache {

struct DownloadOptions {
  // The Hub, or a mirror or test server (HF_ENDPOINT's meaning).
  std::string endpoint = "https://huggingface.co";
  std::string token;                 // sent as a Bearer token when set
  std::filesystem::path cache_root;  // HF_HUB_CACHE's meaning; must be set
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds api_timeout{30'000};
  // A file fails when no byte arrives for this long (then it is resumed, up
  // to max_attempts).
  std::chrono::milliseconds stall_timeout{60'000};
  int max_attempts = 3;  // per file; each later attempt resumes
  // When false, a revision already complete on disk is returned without any
  // request; when true, a named revision is resolved again (one API request)
  // so a moved branch is followed.
  bool recheck_revision = false;
  // fdatasync each blob before naming it, so a blob under its hash stays
  // verified across a power loss (huggingface_hub does not). Off only where
  // the cache is scratch space, or to measure the network path alone.
  bool sync_blobs = true;
  // The least time between two progress reports (the first and the last
  // are always made).
  std::chrono::milliseconds progress_interval{250};
  // Paces the progress reports and the wait for another download's lock;
  // null: RealClock().
  const Clock* clock = nullptr;
};

// The defaults overridden by HF_ENDPOINT, HF_TOKEN (or
// HUGGING_FACE_HUB_TOKEN) and HF_HUB_CACHE (or $HF_HOME/hub), as
// huggingface_hub reads them; for command-line tools.
DownloadOptions OptionsFromEnvironment();

// Bytes of the selected files on disk so far, of their total. Called from
// the downloading thread as bytes arrive, at most every progress_interval.
using ProgressFn = std::function<void(uint64_t bytes_done, uint64_t bytes_total)>;

// Downloads `ref` into options.cache_root. Returns the snapshot; errors are
// one line naming the model: InvalidArgument (bad id, revision or patterns
// that select nothing), NotFound / Unauthenticated / PermissionDenied (from
// the Hub, with what to do), DataLoss (a file's bytes do not match its hash;
// nothing of that file is kept), Cancelled (when *cancel turned true; within
// about a second; partial files are kept for resuming), Unavailable /
// DeadlineExceeded (network, after max_attempts).
absl::StatusOr<ModelSnapshot> Download(const ModelRef& ref, const DownloadOptions& options,
                                       const ProgressFn& progress = nullptr,
                                       const std::atomic<bool>* cancel = nullptr);

}  // namespace canhazgpu::hfcache
