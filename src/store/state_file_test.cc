// The state file on disk: links, foreign files, owners, read-only files and
// failing writes (store/state_file.h, docs/state.md "Permissions").
#include "store/state_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/status_macros.h"
#include "core/strings.h"
#include "store/sqlite_state_store.h"
#include "store/testing/fault_vfs.h"

namespace canhazgpu::store {
namespace {

using testing::FaultAction;
using testing::FaultVfs;
using ::testing::HasSubstr;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class StateFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/state_file_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/state/state.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Message(const absl::Status& s) { return std::string(s.message()); }

  // An initialized store with GPU 1 reserved by alice.
  void CreatePool() {
    auto store = SqliteStateStore::Open(path_, {.create = true});
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)
                    ->Update([](StateTransaction& t) -> absl::Status {
                      RETURN_IF_ERROR(t.SetPool({4, "fake", ""}));
                      Reservation r{.gpu = 1, .uid = 1000, .user = "alice"};
                      return t.InsertReservation(r);
                    })
                    .ok());
  }

  std::vector<int> Reserved(StateStore& store) {
    std::vector<int> gpus;
    EXPECT_TRUE(store
                    .Read([&](StateTransaction& t) -> absl::Status {
                      ASSIGN_OR_RETURN(std::vector<Reservation> list, t.ListReservations());
                      for (const Reservation& r : list) gpus.push_back(r.gpu);
                      return absl::OkStatus();
                    })
                    .ok());
    return gpus;
  }

  std::string dir_, path_;
};

TEST_F(StateFileTest, CreateMakesStickyDirectoryAndSharedFilesWhateverTheUmask) {
  mode_t old = umask(077);
  auto store = SqliteStateStore::Open(path_, {.create = true});
  umask(old);
  ASSERT_TRUE(store.ok()) << store.status();
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    ASSERT_EQ(lstat((path_ + suffix).c_str(), &st), 0) << suffix;
    EXPECT_TRUE(S_ISREG(st.st_mode)) << suffix;
    EXPECT_EQ(st.st_mode & 0777, 0666u) << suffix;
  }
}

TEST_F(StateFileTest, SymbolicLinkIsNeverFollowedNorTurnedIntoADatabase) {
  std::filesystem::create_directories(dir_ + "/state");
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "root's file";
  std::filesystem::create_symlink(victim, path_);
  for (bool create : {false, true}) {
    auto store = SqliteStateStore::Open(path_, {.create = create});
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_THAT(Message(store.status()), HasSubstr("is a symbolic link; refusing to open it"));
  }
  EXPECT_EQ(Slurp(victim), "root's file");
  EXPECT_FALSE(std::filesystem::exists(victim + "-wal"));
}

TEST_F(StateFileTest, SymbolicLinkedWalOrShmIsRefused) {
  CreatePool();
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "keep";
  for (const char* suffix : {"-wal", "-shm"}) {
    std::string companion = path_ + suffix;
    std::filesystem::rename(companion, companion + ".saved");
    std::filesystem::create_symlink(victim, companion);
    auto store = SqliteStateStore::Open(path_);
    ASSERT_FALSE(store.ok()) << suffix;
    EXPECT_THAT(Message(store.status()), HasSubstr(companion + " is a symbolic link"));
    std::filesystem::remove(companion);
    std::filesystem::rename(companion + ".saved", companion);
  }
  EXPECT_EQ(Slurp(victim), "keep");
}

TEST_F(StateFileTest, NonRegularFileIsRefused) {
  std::filesystem::create_directories(path_);  // a directory named state.db
  auto store = SqliteStateStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(Message(store.status()), HasSubstr("is a directory"));
}

// Version 0 and no application id, but tables: someone else's database.
// Even admin (create) must not migrate it in place.
TEST_F(StateFileTest, ForeignSqliteFileWithUserVersionZeroIsRefusedEvenByAdmin) {
  std::filesystem::create_directories(dir_ + "/state");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE photos(x); INSERT INTO photos VALUES (1)", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const std::string before = Slurp(path_);
  for (bool create : {false, true}) {
    auto store = SqliteStateStore::Open(path_, {.create = create});
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(Message(store.status()), HasSubstr("is not a canhazgpu database"));
  }
  EXPECT_EQ(Slurp(path_), before);
}

TEST_F(StateFileTest, WorldWritableDirectoryWithoutStickyBitIsRefusedByAdmin) {
  std::filesystem::create_directories(dir_ + "/state");
  chmod((dir_ + "/state").c_str(), 0777);
  auto store = SqliteStateStore::Open(path_, {.create = true});
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(Message(store.status()), HasSubstr("writable by every user but not sticky"));
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(StateFileTest, OnlyTheOwnerMayInitialize) {
  StateFileInfo theirs{.owner = 4242};
  absl::Status as_root = CheckMayInitialize(path_, theirs, 0);
  EXPECT_EQ(as_root.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Message(as_root), HasSubstr("not root: it was not created by 'canhazgpu admin'"));
  absl::Status as_user = CheckMayInitialize(path_, StateFileInfo{.owner = 0}, 1000);
  EXPECT_THAT(Message(as_user), HasSubstr("belongs to root: only its owner can initialize"));
  EXPECT_TRUE(CheckMayInitialize(path_, theirs, 4242).ok());
}

TEST_F(StateFileTest, FileCreatedByAnotherUserIsRefusedByAdmin) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give the file to another user";
  std::filesystem::create_directories(dir_ + "/state");
  std::ofstream(path_).close();
  ASSERT_EQ(chown(path_.c_str(), 4242, 4242), 0);
  auto store = SqliteStateStore::Open(path_, {.create = true});
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(Message(store.status()), HasSubstr("not root"));
  EXPECT_EQ(Slurp(path_), "") << "left untouched";
}

TEST_F(StateFileTest, ReadOnlyFileIsReadButNotWritten) {
  CreatePool();
  auto store = SqliteStateStore::Open(path_, {.read_only = true});
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(Reserved(**store), std::vector<int>{1});
  absl::Status write = (*store)->Update([](StateTransaction& t) { return t.DeleteReservation(1); });
  EXPECT_EQ(write.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Message(write), HasSubstr("cannot write state file " + path_));
}

TEST_F(StateFileTest, UnwritableFileOpensReadOnly) {
  if (geteuid() == 0) GTEST_SKIP() << "root can write any file (ReadOnlyFileIsReadButNotWritten)";
  CreatePool();
  for (const char* suffix : {"", "-wal", "-shm"}) chmod((path_ + suffix).c_str(), 0444);
  auto store = SqliteStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(Reserved(**store), std::vector<int>{1});
  EXPECT_FALSE((*store)->Update([](StateTransaction& t) { return t.DeleteReservation(1); }).ok());
}

TEST_F(StateFileTest, DiskFullFailsTheWriteCleanlyAndKeepsTheFile) {
  CreatePool();
  FaultVfs::Register();
  auto store = SqliteStateStore::Open(path_, {.vfs = FaultVfs::kName});
  ASSERT_TRUE(store.ok()) << store.status();
  FaultVfs::Arm(FaultAction::kDiskFull, 1);
  absl::Status write = (*store)->Update([](StateTransaction& t) -> absl::Status {
    RETURN_IF_ERROR(t.DeleteReservation(1));
    return t.InsertReservation({.gpu = 2, .uid = 1001, .user = "bob"});
  });
  EXPECT_FALSE(write.ok());
  EXPECT_THAT(Message(write), HasSubstr(path_));
  EXPECT_EQ(Reserved(**store), std::vector<int>{1}) << "reads still work";
  FaultVfs::Arm(FaultAction::kNone, 0);
  store->reset();
  auto reopened = SqliteStateStore::Open(path_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(Reserved(**reopened), std::vector<int>{1}) << "nothing half-written";
}

// Found by store_fuzzer: a time the clock's 64-bit nanoseconds cannot hold
// overflowed converting to it (undefined behaviour) instead of being damage.
TEST_F(StateFileTest, TimeBeyondTheClocksRangeIsDamageNotAnOverflow) {
  CreatePool();
  // 36979663490952 ms: the value store_fuzzer found (year 3141).
  for (const char* ms : {"9000000000000000000", "36979663490952", "-36979663490952"}) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::string sql = std::string("UPDATE reservations SET start_ms = ") + ms;
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    auto store = SqliteStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    absl::Status read = (*store)->Read(
        [](StateTransaction& t) -> absl::Status { return t.ListReservations().status(); });
    EXPECT_EQ(read.code(), absl::StatusCode::kDataLoss) << ms;
    EXPECT_THAT(Message(read), HasSubstr("bad time in the reservation of gpu 1"));
  }
}

// Found by store_fuzzer: a negative user_version indexed the migrations
// before their start (out of bounds) instead of being a foreign file.
TEST_F(StateFileTest, NegativeSchemaVersionIsRefusedNotMigrated) {
  CreatePool();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=-1", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  for (bool create : {false, true}) {
    auto store = SqliteStateStore::Open(path_, {.create = create});
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(Message(store.status()), HasSubstr("is not a canhazgpu database"));
  }
}

// Runs `sql` on the file at `path` with plain SQLite; returns the first
// column of the first row ("" without one).
std::string Sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string result;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
      result = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return result;
}

// Runs `sql` on the file at `path` with plain SQLite; false on an error.
bool Exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  bool ok = sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
            sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

// A file as the canhazgpu of schema `version` wrote it (the shipped
// migrations up to it, nothing more): a manual reservation of gpu 0, a run
// reservation of gpu 2 with a recorded process outside its group, and one
// ended reservation in the history.
void WriteOldVersion(const std::string& path, int version) {
  {
    auto store = SqliteStateStore::Open(path, {.create = true, .migrate_to_for_testing = version});
    ASSERT_TRUE(store.ok()) << store.status();
  }
  ASSERT_EQ(Sql(path, "PRAGMA user_version"), std::to_string(version));
  ASSERT_TRUE(Exec(path, R"sql(
    INSERT INTO pool (id, gpu_count, provider, fake_host) VALUES (1, 4, 'fake', '');
    INSERT INTO reservations (gpu, uid, user, kind, start_ms, expires_ms, note)
      VALUES (0, 1001, 'bob', 'manual', 4000, 4102444000000, 'eval');
    INSERT INTO reservations (gpu, uid, user, kind, start_ms, pid, pid_start, job_processes)
      VALUES (2, 1000, 'alice', 'run', 5000, 42, 43, '50:51');
    INSERT INTO history (gpu, uid, user, kind, start_ms, end_ms, reason)
      VALUES (1, 1000, 'alice', 'run', 1000, 2000, 'job_exited');
  )sql"));
}

// Checks a file that this canhazgpu opened: the reservations and the history
// of the old file are kept, without cgroup or claim, and new reservations can
// name a cgroup or a Kubernetes claim.
void ExpectMigratedKeepingReservations(const std::string& path, const std::string& context) {
  auto store = SqliteStateStore::Open(path);
  ASSERT_TRUE(store.ok()) << context << ": " << store.status();
  EXPECT_EQ(Sql(path, "PRAGMA user_version"), std::to_string(kSchemaVersion)) << context;
  EXPECT_EQ(Sql(path, "PRAGMA integrity_check"), "ok") << context;
  EXPECT_EQ(Sql(path, "SELECT count(*) FROM sqlite_master WHERE name = 'reservations_v7'"), "0")
      << context << ": the rebuilt table took the old one's place";
  absl::Status checked = (*store)->Update([&](StateTransaction& t) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<Reservation> list, t.ListReservations());
    EXPECT_EQ(list.size(), 2u) << context;
    if (list.size() != 2) return absl::OkStatus();
    EXPECT_EQ(list[0].gpu, 0) << context;
    EXPECT_EQ(list[0].kind, ReservationKind::kManual) << context;
    EXPECT_EQ(list[0].user, "bob") << context;
    EXPECT_EQ(list[0].note, "eval") << context;
    EXPECT_EQ(list[0].expires, FromEpochMillis(4102444000000)) << context;
    EXPECT_EQ(list[1].gpu, 2) << context;
    EXPECT_EQ(list[1].kind, ReservationKind::kRun) << context;
    EXPECT_EQ(list[1].start, FromEpochMillis(5000)) << context;
    EXPECT_EQ(list[1].process, (ProcessRef{42, 43})) << context;
    EXPECT_EQ(list[1].job_processes, (std::vector<ProcessRef>{{50, 51}})) << context;
    EXPECT_FALSE(list[1].job_cgroup.has_value()) << context;
    for (const Reservation& r : list) EXPECT_FALSE(r.claim.has_value()) << context;
    ASSIGN_OR_RETURN(std::vector<HistoryRecord> history, t.HistorySince(FromEpochMillis(0)));
    EXPECT_EQ(history.size(), 1u) << context;
    Reservation with_cgroup = list[1];
    with_cgroup.gpu = 3;
    with_cgroup.job_cgroup = "/sys/fs/cgroup/canhazgpu-job-42-43";
    RETURN_IF_ERROR(t.InsertReservation(with_cgroup));
    return t.InsertReservation(
        {.gpu = 1,
         .user = "k8s:ml",
         .kind = ReservationKind::kK8s,
         .claim = KubeClaimRef{.namespace_name = "ml", .name = "c", .uid = "u"}});
  });
  EXPECT_TRUE(checked.ok()) << context << ": " << checked;
}

// Schemas 6 (the job's cgroup) and 7 (Kubernetes claims) are added in place
// to a schema 5 file, in one transaction.
TEST_F(StateFileTest, VersionFiveFileIsMigratedKeepingReservations) {
  WriteOldVersion(path_, 5);
  ExpectMigratedKeepingReservations(path_, "migrated");
}

// Schema 7 rebuilds the reservations table (a wider CHECK on kind) keeping
// every row and column of a schema 6 file.
TEST_F(StateFileTest, VersionSixFileIsMigratedKeepingReservations) {
  WriteOldVersion(path_, 6);
  ASSERT_TRUE(Exec(path_, "UPDATE reservations SET job_cgroup = '/sys/fs/cgroup/x' WHERE gpu = 2"));
  auto store = SqliteStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(Sql(path_, "PRAGMA user_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(Sql(path_, "SELECT job_cgroup FROM reservations WHERE gpu = 2"), "/sys/fs/cgroup/x");
  // A schema 6 file could not hold a k8s row (its CHECK); schema 7 holds one
  // only with its claim.
  EXPECT_FALSE(Exec(path_,
                    "INSERT INTO reservations (gpu, uid, user, kind, start_ms) "
                    "VALUES (1, 0, 'k8s:ml', 'k8s', 1)"));
  EXPECT_TRUE(Exec(path_,
                   "INSERT INTO reservations (gpu, uid, user, kind, start_ms, claim_namespace, "
                   "claim_name, claim_uid, claim_pod) VALUES (1, 0, 'k8s:ml', 'k8s', 1, 'ml', "
                   "'c', 'u', '')"));
  EXPECT_FALSE(Exec(path_,
                    "INSERT INTO reservations (gpu, uid, user, kind, start_ms, claim_namespace, "
                    "claim_name, claim_uid, claim_pod) VALUES (3, 0, 'bob', 'manual', 1, 'ml', "
                    "'c', 'u', '')"));
}

// A damaged file whose k8s row lost its claim (or whose other row has one)
// is reported, not shown as a reservation of nobody's claim.
TEST_F(StateFileTest, K8sReservationWithoutClaimIsDataLoss) {
  CreatePool();
  ASSERT_TRUE(Exec(path_,
                   "PRAGMA ignore_check_constraints=1; UPDATE reservations SET kind = 'k8s' "
                   "WHERE gpu = 1"));
  auto store = SqliteStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::Status read =
      (*store)->Read([](StateTransaction& t) { return t.ListReservations().status(); });
  EXPECT_EQ(read.code(), absl::StatusCode::kDataLoss) << read;
  EXPECT_THAT(Message(read), HasSubstr("bad claim in the reservation of gpu 1"));
}

// Copies the file at `from` (with its WAL and WAL index) to `to`.
void CopyStateFile(const std::string& from, const std::string& to) {
  for (const char* suffix : {"", "-wal", "-shm"}) {
    if (std::filesystem::exists(from + suffix))
      std::filesystem::copy_file(from + suffix, to + suffix);
  }
}

// The migration runs in one transaction: killed at any of its writes, syncs
// or locks, it leaves the old file as it was (and the next command migrates
// it) or the finished current file - never a file between the two.
void KillMigrationAtEveryPoint(const std::string& dir, const std::string& path, int from) {
  const std::string trial = dir + "/trial/state.db";
  bool completed = false;
  int at = 0;
  while (!completed && ++at <= 200) {
    std::filesystem::remove_all(dir + "/trial");
    std::filesystem::create_directories(dir + "/trial");
    CopyStateFile(path, trial);
    pid_t pid = fork();
    if (pid == 0) {
      FaultVfs::Register();
      FaultVfs::Arm(FaultAction::kExit, at);
      _exit(SqliteStateStore::Open(trial, {.vfs = FaultVfs::kName}).ok() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_TRUE(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == FaultVfs::kExitCode)
        << "kill point " << at << ": exit " << WEXITSTATUS(status);
    completed = WEXITSTATUS(status) == 0;
    std::string version = Sql(trial, "PRAGMA user_version");
    EXPECT_TRUE(version == std::to_string(from) || version == std::to_string(kSchemaVersion))
        << "kill point " << at << ": " << version;
    if (completed) {
      EXPECT_EQ(version, std::to_string(kSchemaVersion));
    } else if (version == std::to_string(from)) {
      // Nothing of the new schema is there: no claim columns (before 7), no
      // display names, no new table.
      if (from < 7) {
        EXPECT_EQ(Sql(trial,
                      "SELECT count(*) FROM pragma_table_info('reservations') "
                      "WHERE name = 'claim_uid'"),
                  "0")
            << "kill point " << at;
      }
      if (from < 8) {
        EXPECT_EQ(Sql(trial,
                      "SELECT count(*) FROM pragma_table_info('reservations') "
                      "WHERE name = 'display_user'"),
                  "0")
            << "kill point " << at;
      }
      if (from < 10) {
        EXPECT_EQ(Sql(trial,
                      "SELECT count(*) FROM pragma_table_info('reservations') "
                      "WHERE name = 'share'"),
                  "0")
            << "kill point " << at;
      }
      EXPECT_EQ(Sql(trial,
                    "SELECT count(*) FROM pragma_table_info('history') "
                    "WHERE name = 'shareable'"),
                "0")
          << "kill point " << at;
      for (const char* table : {"reservations_v7", "reservations_v10"}) {
        EXPECT_EQ(
            Sql(trial, StrCat("SELECT count(*) FROM sqlite_master WHERE name = '", table, "'")),
            "0")
            << "kill point " << at;
      }
    }
    ExpectMigratedKeepingReservations(trial, "kill point " + std::to_string(at));
  }
  EXPECT_TRUE(completed) << "the migration never completed in 200 kill points";
  EXPECT_GT(at, 5) << "opening and migrating passes several kill points";
}

// Schema 9 adds the GPUs a waiting request's selector matched; an entry
// queued before reads as wanting any GPU, which leaves it more, not less.
TEST_F(StateFileTest, VersionSevenQueueEntryIsKeptAndWantsAnyGpu) {
  WriteOldVersion(path_, 7);
  ASSERT_TRUE(Exec(path_,
                   "INSERT INTO queue (uid, user, kind, count, waiter_pid, waiter_start, "
                   "enqueued_ms, selector) VALUES (1000, 'alice', 'manual', 1, 7, 8, 9000, "
                   "'--min-memory 80Gi')"));
  auto store = SqliteStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(Sql(path_, "PRAGMA user_version"), std::to_string(kSchemaVersion));
  absl::Status read = (*store)->Read([&](StateTransaction& t) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<QueueEntry> queue, t.ListQueue());
    EXPECT_EQ(queue.size(), 1u);
    if (queue.empty()) return absl::OkStatus();
    EXPECT_EQ(queue[0].selector, "--min-memory 80Gi");
    EXPECT_FALSE(queue[0].eligible.has_value());
    return absl::OkStatus();
  });
  EXPECT_TRUE(read.ok()) << read;
}

TEST_F(StateFileTest, MigrationFromFiveKilledAtAnyPointLeavesVersionFiveOrCurrent) {
  WriteOldVersion(path_, 5);
  KillMigrationAtEveryPoint(dir_, path_, 5);
}

TEST_F(StateFileTest, MigrationFromSixKilledAtAnyPointLeavesVersionSixOrCurrent) {
  WriteOldVersion(path_, 6);
  KillMigrationAtEveryPoint(dir_, path_, 6);
}

// Schema 8 adds the --user display name to reservations and the queue: a
// schema 7 file's rows read with none, and new rows keep theirs.
TEST_F(StateFileTest, VersionSevenFileGainsDisplayUsersKeepingReservations) {
  WriteOldVersion(path_, 7);
  ASSERT_TRUE(Exec(path_,
                   "INSERT INTO queue (uid, user, kind, count, waiter_pid, waiter_start, "
                   "enqueued_ms) VALUES (1000, 'alice', 'run', 1, 7, 8, 9000)"));
  ExpectMigratedKeepingReservations(path_, "migrated");
  auto store = SqliteStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::Status checked = (*store)->Update([&](StateTransaction& t) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<Reservation> list, t.ListReservations());
    for (const Reservation& r : list) EXPECT_EQ(r.display_user, "") << r.gpu;
    ASSIGN_OR_RETURN(std::vector<QueueEntry> queue, t.ListQueue());
    EXPECT_EQ(queue.size(), 1u);
    if (!queue.empty()) {
      EXPECT_EQ(queue[0].display_user, "");
    }
    RETURN_IF_ERROR(t.DeleteReservation(0));
    Reservation shared = list[0];
    shared.display_user = "alice";
    return t.InsertReservation(shared);
  });
  ASSERT_TRUE(checked.ok()) << checked;
  EXPECT_EQ(Sql(path_, "SELECT display_user FROM reservations WHERE gpu = 0"), "alice");
}

TEST_F(StateFileTest, MigrationFromSevenKilledAtAnyPointLeavesVersionSevenOrCurrent) {
  WriteOldVersion(path_, 7);
  KillMigrationAtEveryPoint(dir_, path_, 7);
}

// Schema 10 (ADR 0018) rebuilds the reservations table keyed by (gpu, share):
// every reservation of a schema 9 file stays a whole GPU, its claim kept,
// and the GPUs it holds whole exclude shares.
TEST_F(StateFileTest, VersionNineFileKeepsWholeGpusAndGainsShares) {
  WriteOldVersion(path_, 9);
  ASSERT_TRUE(Exec(path_,
                   "INSERT INTO reservations (gpu, uid, user, kind, start_ms, claim_namespace, "
                   "claim_name, claim_uid, claim_pod, display_user) VALUES (3, 0, 'k8s:ml', "
                   "'k8s', 6000, 'ml', 'c', 'u-3', 'p', 'team');"
                   "INSERT INTO queue (uid, user, kind, count, waiter_pid, waiter_start, "
                   "enqueued_ms) VALUES (1000, 'alice', 'run', 1, 7, 8, 9000)"));
  auto store = SqliteStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(Sql(path_, "PRAGMA user_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(Sql(path_, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(Sql(path_, "SELECT count(*) FROM sqlite_master WHERE name = 'reservations_by_claim'"),
            "1")
      << "the claim index was rebuilt with the table";
  constexpr uint64_t kGi = uint64_t{1} << 30;
  absl::Status checked = (*store)->Update([&](StateTransaction& t) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<Reservation> list, t.ListReservations());
    EXPECT_EQ(list.size(), 3u);
    for (const Reservation& r : list) {
      EXPECT_EQ(r.memory, 0u) << r.gpu;
      EXPECT_EQ(r.share, "") << r.gpu;
    }
    if (list.size() == 3) {
      EXPECT_EQ(list[2].claim->uid, "u-3");
      EXPECT_EQ(list[2].display_user, "team");
    }
    ASSIGN_OR_RETURN(std::vector<QueueEntry> queue, t.ListQueue());
    EXPECT_EQ(queue.size(), 1u);
    if (!queue.empty()) {
      EXPECT_EQ(queue[0].memory, 0u) << "an old request wants whole GPUs";
    }
    ASSIGN_OR_RETURN(std::vector<HistoryRecord> history, t.HistorySince(FromEpochMillis(0)));
    EXPECT_EQ(history.size(), 1u);
    if (!history.empty()) {
      EXPECT_EQ(history[0].memory, 0u);
    }
    Reservation share{.gpu = 0, .memory = 10 * kGi, .share = "s", .shareable = 40 * kGi};
    EXPECT_EQ(t.InsertReservation(share).code(), absl::StatusCode::kAlreadyExists)
        << "gpu 0 is held whole";
    share.gpu = 1;
    RETURN_IF_ERROR(t.InsertReservation(share));
    share.share = "t";
    return t.InsertReservation(share);
  });
  ASSERT_TRUE(checked.ok()) << checked;
  EXPECT_EQ(Sql(path_, "SELECT count(*) FROM reservations WHERE gpu = 1"), "2");
}

TEST_F(StateFileTest, MigrationFromNineKilledAtAnyPointLeavesVersionNineOrCurrent) {
  WriteOldVersion(path_, 9);
  KillMigrationAtEveryPoint(dir_, path_, 9);
}

// Schema 11 adds the GPU's shareable memory to the history, so `report`
// counts a share as its part of the GPU: a schema 10 file's history is kept,
// its share record reading 0 (counted as a whole GPU), and new records keep
// theirs.
TEST_F(StateFileTest, VersionTenHistoryIsKeptAndGainsTheShareable) {
  WriteOldVersion(path_, 10);
  constexpr uint64_t kGi = uint64_t{1} << 30;
  ASSERT_TRUE(Exec(path_,
                   "INSERT INTO history (gpu, uid, user, kind, start_ms, end_ms, reason, memory) "
                   "VALUES (3, 1001, 'bob', 'manual', 1000, 3000, 'released', 10737418240)"));
  auto store = SqliteStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(Sql(path_, "PRAGMA user_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(Sql(path_, "PRAGMA integrity_check"), "ok");
  absl::Status checked = (*store)->Update([&](StateTransaction& t) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<HistoryRecord> history, t.HistorySince(FromEpochMillis(0)));
    EXPECT_EQ(history.size(), 2u);
    if (history.size() == 2) {
      EXPECT_EQ(history[0].memory, 0u);
      EXPECT_EQ(history[1].memory, 10 * kGi);
      EXPECT_EQ(history[1].shareable, 0u) << "not recorded before schema 11";
    }
    return t.AppendHistory({.gpu = 2,
                            .memory = 10 * kGi,
                            .shareable = 80 * kGi,
                            .user = "alice",
                            .start = FromEpochMillis(4000),
                            .end = FromEpochMillis(5000)});
  });
  ASSERT_TRUE(checked.ok()) << checked;
  EXPECT_EQ(Sql(path_, "SELECT shareable FROM history WHERE gpu = 2"), std::to_string(80 * kGi));
}

TEST_F(StateFileTest, MigrationFromTenKilledAtAnyPointLeavesVersionTenOrCurrent) {
  WriteOldVersion(path_, 10);
  KillMigrationAtEveryPoint(dir_, path_, 10);
}

}  // namespace
}  // namespace canhazgpu::store
