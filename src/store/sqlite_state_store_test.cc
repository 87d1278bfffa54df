// SQLite-specific behaviour: files, permissions, schema versions, damage,
// and two connections racing.
#include "store/sqlite_state_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/status_macros.h"

namespace canhazgpu::store {
namespace {

using ::testing::HasSubstr;

class SqliteStateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sqlite_store_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/state/state.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Message(const absl::Status& s) { return std::string(s.message()); }

  void SetUserVersion(int version) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::string sql = "PRAGMA user_version=" + std::to_string(version);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }

  std::string dir_, path_;
};

TEST_F(SqliteStateStoreTest, CreatesSharedDirectoryAndFileInWalMode) {
  auto store = SqliteStateStore::Open(path_, {.create = true});
  ASSERT_TRUE(store.ok()) << store.status();
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  EXPECT_TRUE(std::filesystem::exists(path_ + "-wal"));
}

TEST_F(SqliteStateStoreTest, DataSurvivesReopen) {
  {
    auto store = SqliteStateStore::Open(path_, {.create = true});
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)
                    ->Update([](StateTransaction& t) {
                      return t.SetPool({2, "fake", ""});
                    })
                    .ok());
  }
  auto store = SqliteStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)
                  ->Read([](StateTransaction& t) {
                    EXPECT_EQ(t.GetPool().value()->gpu_count, 2);
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST_F(SqliteStateStoreTest, MissingFileWithoutCreateSaysRunAdmin) {
  auto store = SqliteStateStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(Message(store.status()), HasSubstr("run 'canhazgpu admin'"));
  EXPECT_FALSE(std::filesystem::exists(path_)) << "nothing is created";
}

// A file written by the first release (schema 1) keeps its reservations.
TEST_F(SqliteStateStoreTest, VersionOneFileIsMigratedKeepingReservations) {
  std::filesystem::create_directories(dir_ + "/state");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const char* v1 = R"sql(
    PRAGMA journal_mode=WAL;
    CREATE TABLE pool (id INTEGER PRIMARY KEY CHECK (id = 1), gpu_count INTEGER NOT NULL,
      provider TEXT NOT NULL, fake_host TEXT NOT NULL DEFAULT '') STRICT;
    CREATE TABLE reservations (gpu INTEGER PRIMARY KEY, uid INTEGER NOT NULL,
      user TEXT NOT NULL, kind TEXT NOT NULL, start_ms INTEGER NOT NULL, expires_ms INTEGER,
      pid INTEGER, pid_start INTEGER, note TEXT NOT NULL DEFAULT '',
      command TEXT NOT NULL DEFAULT '') STRICT;
    CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, gpu INTEGER NOT NULL,
      uid INTEGER NOT NULL, user TEXT NOT NULL, kind TEXT NOT NULL, start_ms INTEGER NOT NULL,
      end_ms INTEGER NOT NULL, reason TEXT NOT NULL, note TEXT NOT NULL DEFAULT '') STRICT;
    INSERT INTO pool VALUES (1, 4, 'fake', '');
    INSERT INTO reservations (gpu, uid, user, kind, start_ms, pid, pid_start, command)
      VALUES (1, 1000, 'alice', 'run', 5000, 42, 43, 'python x.py');
    PRAGMA application_id=1128810320; PRAGMA user_version=1;
  )sql";
  ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);

  auto store = SqliteStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)
                  ->Read([](StateTransaction& t) -> absl::Status {
                    ASSIGN_OR_RETURN(std::vector<Reservation> list, t.ListReservations());
                    EXPECT_EQ(list.size(), 1u);
                    if (list.empty()) return absl::OkStatus();
                    EXPECT_EQ(list[0].user, "alice");
                    EXPECT_EQ(list[0].process, (ProcessRef{42, 43}));
                    EXPECT_FALSE(list[0].wrapper.has_value());
                    ASSIGN_OR_RETURN(std::vector<QueueEntry> queue, t.ListQueue());
                    EXPECT_TRUE(queue.empty());
                    return absl::OkStatus();
                  })
                  .ok());
}

// A damaged job_processes list is reported, not read as an empty one (which
// would make a live job look dead and hand its GPUs out).
TEST_F(SqliteStateStoreTest, MalformedJobProcessesAreDataLoss) {
  {
    auto store = SqliteStateStore::Open(path_, {.create = true});
    ASSERT_TRUE(store.ok()) << store.status();
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO reservations (gpu, uid, user, kind, start_ms, job_processes) "
                         "VALUES (0, 1000, 'alice', 'run', 1, '12:x')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = SqliteStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::Status read =
      (*store)->Read([](StateTransaction& t) { return t.ListReservations().status(); });
  EXPECT_EQ(read.code(), absl::StatusCode::kDataLoss) << read;
  EXPECT_THAT(Message(read), HasSubstr("job_processes"));
}

TEST_F(SqliteStateStoreTest, NewerSchemaIsRefused) {
  ASSERT_TRUE(SqliteStateStore::Open(path_, {.create = true}).ok());
  SetUserVersion(kSchemaVersion + 1);
  auto store = SqliteStateStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(Message(store.status()), HasSubstr("newer than this canhazgpu understands"));
}

TEST_F(SqliteStateStoreTest, CorruptedFileIsRefusedAndLeftAlone) {
  std::filesystem::create_directories(dir_ + "/state");
  std::string junk(8192, 'x');
  std::ofstream(path_) << junk;
  for (bool create : {false, true}) {
    auto store = SqliteStateStore::Open(path_, {.create = create});
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(Message(store.status()), HasSubstr("corrupted or not a canhazgpu database"));
  }
  std::ifstream in(path_);
  std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, junk);
}

TEST_F(SqliteStateStoreTest, ForeignSqliteFileIsRefused) {
  std::filesystem::create_directories(dir_ + "/state");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE t(x); PRAGMA user_version=1", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  auto store = SqliteStateStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(Message(store.status()), HasSubstr("not a canhazgpu database"));
}

TEST_F(SqliteStateStoreTest, UnwritableFileIsReported) {
  if (geteuid() == 0) GTEST_SKIP() << "root can write any file";
  ASSERT_TRUE(SqliteStateStore::Open(path_, {.create = true}).ok());
  chmod(path_.c_str(), 0444);
  auto store = SqliteStateStore::Open(path_);
  EXPECT_FALSE(store.ok() && (*store)
                                 ->Update([](StateTransaction& t) {
                                   return t.SetPool({1, "x", ""});
                                 })
                                 .ok());
}

TEST_F(SqliteStateStoreTest, TwoConnectionsRacingForOneGpuHaveOneWinner) {
  ASSERT_TRUE(SqliteStateStore::Open(path_, {.create = true}).ok());
  std::atomic<int> winners = 0, losers = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto store = SqliteStateStore::Open(path_);
      ASSERT_TRUE(store.ok()) << store.status();
      for (int gpu = 0; gpu < 50; ++gpu) {
        absl::Status s = (*store)->Update([&](StateTransaction& t) {
          Reservation r{.gpu = gpu, .uid = static_cast<uint32_t>(i), .user = "u"};
          return t.InsertReservation(r);
        });
        (s.ok() ? winners : losers)++;
        EXPECT_TRUE(s.ok() || absl::IsAlreadyExists(s)) << s;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(winners, 50);
  EXPECT_EQ(losers, 7 * 50);
}

// Every command is one short connection. Without the checkpoint in the
// commit hook the WAL would grow with every command (no checkpoint on close),
// and each new process would replay all of it when opening the file.
TEST_F(SqliteStateStoreTest, WalStaysSmallAcrossShortConnections) {
  ASSERT_TRUE(SqliteStateStore::Open(path_, {.create = true}).ok());
  for (int i = 0; i < 300; ++i) {
    auto store = SqliteStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)
                    ->Update([&](StateTransaction& t) {
                      if (i % 2 == 1) return t.DeleteReservation(0);
                      return t.InsertReservation({.gpu = 0, .uid = 1, .user = "u"});
                    })
                    .ok());
  }
  std::error_code ec;
  uintmax_t wal_bytes = std::filesystem::file_size(path_ + "-wal", ec);
  if (ec) wal_bytes = 0;  // no WAL at all is fine too
  EXPECT_LT(wal_bytes, 512u * 1024);
  auto store = SqliteStateStore::Open(path_);
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE((*store)
                  ->Read([](StateTransaction& t) -> absl::Status {
                    ASSIGN_OR_RETURN(auto reservations, t.ListReservations());
                    EXPECT_TRUE(reservations.empty());
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST_F(SqliteStateStoreTest, WriterWaitsForTheLockThenGivesUpWithAClearError) {
  ASSERT_TRUE(SqliteStateStore::Open(path_, {.create = true}).ok());
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto store = SqliteStateStore::Open(path_, {.busy_timeout = std::chrono::milliseconds(100)});
  ASSERT_TRUE(store.ok());
  absl::Status s = (*store)->Update([](StateTransaction& t) { return t.SetPool({1, "x", ""}); });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(Message(s), HasSubstr("locked by another canhazgpu process"));
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  // Once the lock is free the same connection writes.
  EXPECT_TRUE((*store)->Update([](StateTransaction& t) { return t.SetPool({1, "x", ""}); }).ok());
}

}  // namespace
}  // namespace canhazgpu::store
