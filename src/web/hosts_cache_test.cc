// HostsCache: asks once however many readers, answers at once with what it
// has while a slow collection runs, and only the first reader ever waits.
#include "web/hosts_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace canhazgpu::web {
namespace {

using Json = nlohmann::ordered_json;
using std::chrono::hours;

template <typename Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

TEST(HostsCacheTest, AsksOnceWhileTheAnswerIsFresh) {
  std::atomic<int> calls{0};
  HostsCache cache([&] { return Json(++calls); }, hours(1));
  EXPECT_EQ(calls, 0);  // nobody asked yet
  EXPECT_EQ(cache.Get(), 1);
  std::vector<std::thread> readers;
  for (int i = 0; i < 8; ++i) readers.emplace_back([&] { EXPECT_EQ(cache.Get(), 1); });
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(calls, 1);
}

TEST(HostsCacheTest, AStaleAnswerIsServedAtOnceWhileASlowCollectionRuns) {
  std::atomic<int> calls{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  HostsCache cache(
      [&] {
        const int n = ++calls;
        if (n == 2) released.wait();  // the second collection hangs, as a slow ssh
        return Json(n);
      },
      std::chrono::seconds(0));
  EXPECT_EQ(cache.Get(), 1);
  // Stale at once (max age 0): this wakes the collector, which hangs...
  EXPECT_EQ(cache.Get(), 1);
  ASSERT_TRUE(Eventually([&] { return calls == 2; }));
  // ...and readers are still answered, with the last answer.
  EXPECT_EQ(cache.Get(), 1);
  EXPECT_EQ(calls, 2);
  release.set_value();
  EXPECT_TRUE(Eventually([&] { return cache.Get().get<int>() >= 2; }));
}

TEST(HostsCacheTest, StopsWithoutEverBeingAsked) {
  bool called = false;
  {
    HostsCache cache(
        [&] {
          called = true;
          return Json::array();
        },
        hours(1));
  }
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace canhazgpu::web
