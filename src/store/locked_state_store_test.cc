#include "store/locked_state_store.h"

#include <filesystem>
#include <thread>

#include "gtest/gtest.h"
#include "store/sqlite_state_store.h"

namespace canhazgpu::store {
namespace {

// Four threads on one SQLite connection, each reserving and releasing its
// own GPU: through the lock every transaction succeeds.
TEST(LockedStateStoreTest, ThreadsShareOneConnectionThroughTheLock) {
  char tmpl[] = "/tmp/locked_state_store_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  LockedStateStore store(SqliteStateStore::Open(dir + "/state.db", {.create = true}).value());
  ASSERT_TRUE(store.Update([](StateTransaction& tx) { return tx.SetPool({.gpu_count = 4}); }).ok());
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int gpu = 0; gpu < 4; ++gpu) {
    threads.emplace_back([&, gpu] {
      for (int i = 0; i < 50; ++i) {
        Reservation r;
        r.gpu = gpu;
        r.user = "u";
        if (!store.Update([&](StateTransaction& tx) { return tx.InsertReservation(r); }).ok() ||
            !store.Read([](StateTransaction& tx) { return tx.ListReservations().status(); }).ok() ||
            !store.Update([&](StateTransaction& tx) { return tx.DeleteReservation(gpu); }).ok()) {
          ++failures[gpu];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace canhazgpu::store
