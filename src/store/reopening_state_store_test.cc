#include "store/reopening_state_store.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/sqlite_state_store.h"

namespace canhazgpu::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ReopeningStateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/reopening_state_store_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path() const { return dir_ + "/state.db"; }

  // A new state file at Path() with a pool of `gpus`, as `canhazgpu admin` makes one.
  void MakeFile(int gpus) {
    auto store = SqliteStateStore::Open(Path(), {.create = true}).value();
    ASSERT_TRUE(
        store->Update([&](StateTransaction& tx) { return tx.SetPool({.gpu_count = gpus}); }).ok());
  }
  void RemoveFile() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(Path() + suffix);
  }
  std::unique_ptr<ReopeningStateStore> Open() {
    return ReopeningStateStore::Open(
               Path(),
               [](const std::string& path) -> absl::StatusOr<std::unique_ptr<StateStore>> {
                 return SqliteStateStore::Open(path);
               },
               Log([this](LogLevel, const std::string& line) { log_.push_back(line); }))
        .value();
  }
  int PoolSize(StateStore& store) {
    int gpus = -1;
    EXPECT_TRUE(store
                    .Read([&](StateTransaction& tx) -> absl::Status {
                      absl::StatusOr<std::optional<PoolConfig>> pool = tx.GetPool();
                      if (pool.ok() && *pool) gpus = (*pool)->gpu_count;
                      return pool.status();
                    })
                    .ok());
    return gpus;
  }

  std::string dir_;
  std::vector<std::string> log_;
};

// Issue 29 item 4: after the state file was deleted and made again, the
// node daemon kept the old one open and published stale slices.
TEST_F(ReopeningStateStoreTest, AFileDeletedAndMadeAgainIsOpenedAtTheNextCall) {
  MakeFile(4);
  std::unique_ptr<ReopeningStateStore> store = Open();
  EXPECT_EQ(PoolSize(*store), 4);

  // Gone: the old file is still used, and nothing is said.
  RemoveFile();
  EXPECT_EQ(PoolSize(*store), 4);
  EXPECT_TRUE(log_.empty());

  MakeFile(2);
  EXPECT_EQ(PoolSize(*store), 2);
  EXPECT_EQ(store->reopens(), 1);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_THAT(log_[0], HasSubstr("state file " + Path() + " was replaced (inode "));
  EXPECT_THAT(log_[0], HasSubstr("): using the new one"));
  // Writes go to the new file, where every other process sees them.
  ASSERT_TRUE(
      store->Update([](StateTransaction& tx) { return tx.SetPool({.gpu_count = 3}); }).ok());
  EXPECT_EQ(PoolSize(*SqliteStateStore::Open(Path()).value()), 3);
  EXPECT_EQ(store->reopens(), 1);
}

TEST_F(ReopeningStateStoreTest, ANewFileNotYetInitializedIsWaitedFor) {
  MakeFile(4);
  std::unique_ptr<ReopeningStateStore> store = Open();
  RemoveFile();
  // What admin has made before it sets the pool: an empty file.
  { std::ofstream touch(Path()); }
  EXPECT_EQ(PoolSize(*store), 4);
  EXPECT_EQ(PoolSize(*store), 4);
  ASSERT_EQ(log_.size(), 1u) << "said once";
  EXPECT_THAT(log_[0], HasSubstr("the new one cannot be opened yet (state file " + Path() +
                                 " is not initialized"));
  RemoveFile();
  MakeFile(2);
  EXPECT_EQ(PoolSize(*store), 2);
  EXPECT_THAT(log_, ElementsAre(HasSubstr("cannot be opened yet"), HasSubstr("using the new one")));
}

}  // namespace
}  // namespace canhazgpu::store
