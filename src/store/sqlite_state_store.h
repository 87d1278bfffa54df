// StateStore in one SQLite file shared by every user of the host (default
// /var/lib/canhazgpu/state.db). WAL mode, so readers never block the writer;
// every change is one short BEGIN IMMEDIATE transaction with a busy timeout,
// so concurrent canhazgpu processes queue for the write lock instead of
// failing. The schema is versioned (PRAGMA user_version) and migrated on
// open; a file from a newer canhazgpu is refused rather than misread.
// See docs/state.md for the schema and the file permissions.
// One object holds one connection; use it from one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <random>
#include <string>

#include "absl/status/statusor.h"
#include "store/state_store.h"

struct sqlite3;

namespace canhazgpu::store {

inline constexpr int kSchemaVersion = 11;

class StatementCache;

struct SqliteOptions {
  // Create the file (and its directory) when missing; only `admin` does.
  bool create = false;
  std::chrono::milliseconds busy_timeout = std::chrono::seconds(10);
  // Open read-only even when the file is writable (tests: root ignores
  // file modes). A file this process may not write is opened read-only
  // anyway.
  bool read_only = false;
  // The SQLite VFS by name (tests inject faults with one); null: the default.
  const char* vfs = nullptr;
  // Tests: migrate only up to this version, to write a file exactly as an
  // older canhazgpu did (its reservations are then read with plain SQL: this
  // store reads only the current schema). 0: kSchemaVersion.
  int migrate_to_for_testing = 0;
};

class SqliteStateStore : public StateStore {
 public:
  static absl::StatusOr<std::unique_ptr<SqliteStateStore>> Open(const std::string& path,
                                                                SqliteOptions options = {});
  ~SqliteStateStore() override;

  absl::Status Update(const TransactionFn& fn) override;
  absl::Status Read(const TransactionFn& fn) override;

 private:
  // The WAL is checkpointed by the commit that grows it past this many frames
  // (4 KiB pages): small enough that opening the file stays cheap.
  static constexpr int kCheckpointFrames = 64;

  SqliteStateStore(sqlite3* db, std::string path, std::chrono::milliseconds busy_timeout);
  static int WaitForLock(void* self, int attempt);
  static int CheckpointWhenLarge(void* self, sqlite3* db, const char* schema, int frames);
  absl::Status Migrate(bool create, int target);
  absl::Status Run(const char* begin, const TransactionFn& fn);

  sqlite3* db_;
  std::unique_ptr<StatementCache> statements_;
  std::string path_;
  std::chrono::milliseconds busy_timeout_;
  bool read_only_ = false;
  std::chrono::steady_clock::time_point waiting_since_;
  std::minstd_rand random_;  // seeded when it first waits
};

}  // namespace canhazgpu::store
