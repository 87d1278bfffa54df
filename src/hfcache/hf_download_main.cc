// hf_download: downloads a model into the Hugging Face cache with
// hfcache::Download (for bench/hf_download.sh and by hand). Reads
// HF_ENDPOINT, HF_TOKEN and HF_HUB_CACHE like huggingface_hub; prints the
// snapshot directory.
//
//   hf_download ORG/NAME [--revision R] [--include GLOB]... [--cache DIR]
//               [--endpoint URL] [--progress] [--no-sync]
#include <cstdio>
#include <string>

#include "hfcache/download.h"

using canhazgpu::hfcache::Download;
using canhazgpu::hfcache::DownloadOptions;
using canhazgpu::hfcache::ModelRef;

int main(int argc, char** argv) {
  DownloadOptions options = canhazgpu::hfcache::OptionsFromEnvironment();
  ModelRef ref;
  bool progress = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--progress")
      progress = true;
    else if (arg == "--no-sync")
      options.sync_blobs = false;
    else if (arg == "--revision" && has_value)
      ref.revision = argv[++i];
    else if (arg == "--include" && has_value)
      ref.allow_patterns.push_back(argv[++i]);
    else if (arg == "--cache" && has_value)
      options.cache_root = argv[++i];
    else if (arg == "--endpoint" && has_value)
      options.endpoint = argv[++i];
    else if (ref.repo_id.empty() && !arg.starts_with("-"))
      ref.repo_id = arg;
    else {
      std::fprintf(stderr,
                   "usage: hf_download ORG/NAME [--revision R] [--include GLOB]... "
                   "[--cache DIR] [--endpoint URL] [--progress] [--no-sync]\n");
      return 2;
    }
  }
  auto report = [](uint64_t done, uint64_t total) {
    std::fprintf(stderr, "\r%llu / %llu bytes", static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total));
  };
  absl::StatusOr<canhazgpu::hfcache::ModelSnapshot> snapshot =
      Download(ref, options, progress ? canhazgpu::hfcache::ProgressFn(report) : nullptr);
  if (progress) std::fprintf(stderr, "\n");
  if (!snapshot.ok()) {
    std::fprintf(stderr, "hf_download: %s\n", std::string(snapshot.status().message()).c_str());
    return 1;
  }
  std::printf("%s\n", snapshot->snapshot_dir.c_str());
  return 0;
}
