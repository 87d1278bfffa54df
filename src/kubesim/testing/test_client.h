// Helpers for tests that talk to a TestApiServer through the real client.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

#include "gtest/gtest.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace canhazgpu::kubesim {

// A client whose retries and rate limits do not slow a test down.
inline std::unique_ptr<kube::Client> ConnectTestClient(const kube::RestConfig& config,
                                                       kube::ClientOptions options = {}) {
  options.backoff_base = std::chrono::milliseconds(1);
  options.qps = 1000;
  options.burst = 1000;
  auto client = kube::Client::Create(config, options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

// Polls `condition` for up to 20 s: for what another thread or the server
// does in its own time (a watch event, an informer's cache).
inline bool EventuallyTrue(const std::function<bool()>& condition) {
  for (int i = 0; i < 2000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace canhazgpu::kubesim
