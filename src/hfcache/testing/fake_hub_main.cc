// hfcache_fake_hub: serves every regular file under a directory as one
// model's files on the fake Hub (for bench/hf_download.sh), prints the port
// on stdout, and serves until SIGINT or SIGTERM.
//
//   hfcache_fake_hub --dir DIR [--repo org/name] [--port N] [--token T]
//                    [--lfs-threshold BYTES]
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "hfcache/testing/fake_hub.h"

namespace fs = std::filesystem;
using canhazgpu::hfcache::testing::FakeFile;
using canhazgpu::hfcache::testing::FakeHub;
using canhazgpu::hfcache::testing::FakeModel;

int main(int argc, char** argv) {
  std::string dir, token, repo = "bench/model";
  int port = 0;
  uint64_t lfs_threshold = 10u << 20;  // the Hub stores files over ~10 MB in LFS
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--dir")
      dir = value;
    else if (flag == "--repo")
      repo = value;
    else if (flag == "--port")
      port = std::atoi(value.c_str());
    else if (flag == "--token")
      token = value;
    else if (flag == "--lfs-threshold")
      lfs_threshold = std::strtoull(value.c_str(), nullptr, 10);
    else {
      std::fprintf(stderr, "hfcache_fake_hub: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: hfcache_fake_hub --dir DIR [--repo org/name] [--port N]\n");
    return 2;
  }
  FakeModel model{.repo_id = repo, .commit = std::string(40, 'c'), .private_repo = !token.empty()};
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    model.files.push_back(FakeFile{.path = fs::relative(entry.path(), dir).string(),
                                   .disk_path = entry.path().string(),
                                   .lfs = entry.file_size() >= lfs_threshold});
  }
  // Signals are taken with sigwait below, not by whichever thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  FakeHub hub(token);
  if (absl::Status s = hub.AddModel(std::move(model)); !s.ok()) {
    std::fprintf(stderr, "hfcache_fake_hub: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  if (absl::Status s = hub.Start(port); !s.ok()) {
    std::fprintf(stderr, "hfcache_fake_hub: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::printf("%d\n", hub.port());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&signals, &signal);
  hub.Stop();
  return 0;
}
