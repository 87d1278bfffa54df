#include "store/change_watcher.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>

#include <filesystem>

#include "store/sqlite_state_store.h"

namespace canhazgpu::store {
namespace {

// Whether the watcher has something to say right now. inotify queues the
// event inside the writer's write(2), so no waiting is involved.
bool Readable(const ChangeWatcher& w) {
  struct pollfd p = {w.fd(), POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

class ChangeWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/change_watcher_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/state.db";
    auto store = SqliteStateStore::Open(path_, {.create = true});
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)
                    ->Update([](StateTransaction& t) {
                      return t.SetPool({2, "fake", ""});
                    })
                    .ok());
    store_ = std::move(*store);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string dir_, path_;
  std::unique_ptr<SqliteStateStore> store_;
};

TEST_F(ChangeWatcherTest, AnotherConnectionsCommitWakesTheWatcher) {
  auto watcher = ChangeWatcher::Watch(path_);
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  EXPECT_FALSE(Readable(*watcher));
  auto other = SqliteStateStore::Open(path_, {});
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)
                  ->Update([](StateTransaction& t) {
                    return t.InsertReservation({.gpu = 1, .uid = 1, .user = "u"});
                  })
                  .ok());
  ASSERT_TRUE(Readable(*watcher));
  EXPECT_TRUE(watcher->Drain());
  EXPECT_FALSE(Readable(*watcher));
}

// A waiter's poll that finds nothing to change must not wake waiters
// (itself included), or they would spin.
TEST_F(ChangeWatcherTest, TransactionsThatChangeNothingStayQuiet) {
  auto watcher = ChangeWatcher::Watch(path_);
  ASSERT_TRUE(watcher.ok());
  ASSERT_TRUE(store_->Update([](StateTransaction& t) { return t.ListQueue().status(); }).ok());
  ASSERT_TRUE(store_->Read([](StateTransaction& t) { return t.ListReservations().status(); }).ok());
  EXPECT_FALSE(Readable(*watcher));
}

TEST_F(ChangeWatcherTest, OtherFilesInTheDirectoryAreNotOurs) {
  auto watcher = ChangeWatcher::Watch(path_);
  ASSERT_TRUE(watcher.ok());
  FILE* f = fopen((dir_ + "/unrelated").c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("x", f);
  fclose(f);
  EXPECT_FALSE(watcher->Drain());
}

TEST_F(ChangeWatcherTest, MissingDirectoryIsAnError) {
  EXPECT_FALSE(ChangeWatcher::Watch("/nonexistent/dir/state.db").ok());
}

}  // namespace
}  // namespace canhazgpu::store
