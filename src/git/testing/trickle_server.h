// Test-only: a TCP server on 127.0.0.1 that accepts every connection and
// then answers as a hostile or broken server might: with the start of an
// HTTP response followed by one more header byte every `gap`, never
// ending, or (gap 0) with nothing at all. libgit2 alone would wait on it for
// as long as it liked; git::TransferLimits must not.
//
// Thread safety: WaitForClients may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace canhazgpu::git::testing {

class TrickleServer {
 public:
  explicit TrickleServer(std::chrono::milliseconds gap);
  ~TrickleServer();  // closes every connection
  TrickleServer(const TrickleServer&) = delete;
  TrickleServer& operator=(const TrickleServer&) = delete;

  // http://127.0.0.1:PORT/<path>
  std::string Url(std::string_view path = "slow.git") const;
  // Blocks until `count` clients have connected in all.
  void WaitForClients(int count);

 private:
  void Accept();
  void Serve(int client);

  const std::chrono::milliseconds gap_;
  int listener_ = -1;
  int port_ = 0;
  Mutex mu_;
  std::condition_variable_any cv_;
  int clients_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread acceptor_;
  std::vector<std::thread> servers_;  // acceptor_ only, until it is joined
};

}  // namespace canhazgpu::git::testing
