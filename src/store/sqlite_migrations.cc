#include "store/sqlite_migrations.h"

#include <iterator>

#include "store/sqlite_state_store.h"

namespace canhazgpu::store {
namespace {

constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE pool (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  gpu_count INTEGER NOT NULL CHECK (gpu_count > 0),
  provider TEXT NOT NULL,
  fake_host TEXT NOT NULL DEFAULT ''
) STRICT;
-- Keyed by GPU: a second holder of a GPU cannot be inserted.
CREATE TABLE reservations (
  gpu INTEGER PRIMARY KEY,
  uid INTEGER NOT NULL,
  user TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('run', 'manual')),
  start_ms INTEGER NOT NULL,
  expires_ms INTEGER,
  pid INTEGER,
  pid_start INTEGER,
  note TEXT NOT NULL DEFAULT '',
  command TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE TABLE history (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  gpu INTEGER NOT NULL,
  uid INTEGER NOT NULL,
  user TEXT NOT NULL,
  kind TEXT NOT NULL,
  start_ms INTEGER NOT NULL,
  end_ms INTEGER NOT NULL,
  reason TEXT NOT NULL,
  note TEXT NOT NULL DEFAULT ''
) STRICT;
-- MAX(end_ms) per GPU and per (user, GPU) are index lookups, not scans.
CREATE INDEX history_by_gpu ON history (gpu, end_ms);
CREATE INDEX history_by_user ON history (uid, gpu, end_ms);
CREATE INDEX history_by_end ON history (end_ms);
)sql",
    // 2: run jobs watched by their wrapper and process group; the queue.
    R"sql(
ALTER TABLE reservations ADD COLUMN wrapper_pid INTEGER;
ALTER TABLE reservations ADD COLUMN wrapper_start INTEGER;
ALTER TABLE reservations ADD COLUMN command_exited_ms INTEGER;
-- A partial hold of a waiting queue entry.
ALTER TABLE reservations ADD COLUMN queue_id INTEGER;
-- AUTOINCREMENT: ids only grow, so the id order is the arrival order.
CREATE TABLE queue (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uid INTEGER NOT NULL,
  user TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('run', 'manual')),
  count INTEGER NOT NULL CHECK (count > 0),
  ids TEXT NOT NULL DEFAULT '',
  duration_ms INTEGER,
  force INTEGER NOT NULL DEFAULT 0,
  note TEXT NOT NULL DEFAULT '',
  command TEXT NOT NULL DEFAULT '',
  waiter_pid INTEGER NOT NULL,
  waiter_start INTEGER NOT NULL,
  enqueued_ms INTEGER NOT NULL
) STRICT;
)sql",
    // 3: what the GPUs were doing when canhazgpu looked (for `report`).
    R"sql(
CREATE TABLE usage_samples (
  gpu INTEGER NOT NULL,
  at_ms INTEGER NOT NULL,
  memory_used INTEGER NOT NULL,
  busy INTEGER NOT NULL,
  PRIMARY KEY (gpu, at_ms)
) STRICT, WITHOUT ROWID;
CREATE INDEX usage_samples_by_time ON usage_samples (at_ms);
)sql",
    // 4: what a queued request asks the GPUs to be (--where and friends).
    R"sql(
ALTER TABLE queue ADD COLUMN selector TEXT NOT NULL DEFAULT '';
)sql",
    // 5: a run job's processes that left its process group ("pid:start ..."),
    // and whose unreserved use a forced reservation overrode.
    R"sql(
ALTER TABLE reservations ADD COLUMN job_processes TEXT NOT NULL DEFAULT '';
ALTER TABLE reservations ADD COLUMN forced_over TEXT NOT NULL DEFAULT '';
)sql",
    // 6: a run job's own cgroup v2 directory, where the host offered one.
    R"sql(
ALTER TABLE reservations ADD COLUMN job_cgroup TEXT;
)sql",
    // 7: GPUs prepared for Kubernetes claims (kind 'k8s') and the claim each
    // serves. SQLite cannot change a CHECK in place, so the table is rebuilt
    // with its columns in the same order (the data copied as it is) and the
    // claim columns added; the claim is set exactly for 'k8s' rows.
    R"sql(
CREATE TABLE reservations_v7 (
  gpu INTEGER PRIMARY KEY,
  uid INTEGER NOT NULL,
  user TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('run', 'manual', 'k8s')),
  start_ms INTEGER NOT NULL,
  expires_ms INTEGER,
  pid INTEGER,
  pid_start INTEGER,
  note TEXT NOT NULL DEFAULT '',
  command TEXT NOT NULL DEFAULT '',
  wrapper_pid INTEGER,
  wrapper_start INTEGER,
  command_exited_ms INTEGER,
  queue_id INTEGER,
  job_processes TEXT NOT NULL DEFAULT '',
  forced_over TEXT NOT NULL DEFAULT '',
  job_cgroup TEXT,
  claim_namespace TEXT,
  claim_name TEXT,
  claim_uid TEXT,
  claim_pod TEXT,
  CHECK ((kind = 'k8s') = (claim_uid IS NOT NULL AND claim_namespace IS NOT NULL AND
                           claim_name IS NOT NULL AND claim_pod IS NOT NULL))
) STRICT;
INSERT INTO reservations_v7 (gpu, uid, user, kind, start_ms, expires_ms, pid, pid_start, note,
    command, wrapper_pid, wrapper_start, command_exited_ms, queue_id, job_processes, forced_over,
    job_cgroup)
  SELECT gpu, uid, user, kind, start_ms, expires_ms, pid, pid_start, note, command, wrapper_pid,
    wrapper_start, command_exited_ms, queue_id, job_processes, forced_over, job_cgroup
  FROM reservations;
DROP TABLE reservations;
ALTER TABLE reservations_v7 RENAME TO reservations;
-- The driver finds a claim's GPUs by its uid.
CREATE INDEX reservations_by_claim ON reservations (claim_uid) WHERE claim_uid IS NOT NULL;
)sql",
    // 8: the name given with --user (the Go tool's display identity), on a
    // reservation and on a waiting request; '' when none.
    R"sql(
ALTER TABLE reservations ADD COLUMN display_user TEXT NOT NULL DEFAULT '';
ALTER TABLE queue ADD COLUMN display_user TEXT NOT NULL DEFAULT '';
)sql",
    // 9: the GPUs a waiting request's selector matched ("0,2"; NULL: any), so
    // the waiters behind it know which free GPUs it can use (backfill).
    R"sql(
ALTER TABLE queue ADD COLUMN eligible TEXT;
)sql",
    // 10: shares of a GPU's memory (ADR 0018). The key becomes (gpu, share):
    // the table is rebuilt with its columns in the same order and the share
    // columns added; every existing row is a whole GPU (share '', memory 0).
    // WITHOUT ROWID: the key is the table, so no second index is read with
    // the schema by every command (docs/perf.md's per-command budget).
    // Whole-or-shares, and the sum of shares, are checked by the insert in
    // its transaction (share_check.h): SQL constraints cannot sum rows.
    R"sql(
CREATE TABLE reservations_v10 (
  gpu INTEGER NOT NULL,
  uid INTEGER NOT NULL,
  user TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('run', 'manual', 'k8s')),
  start_ms INTEGER NOT NULL,
  expires_ms INTEGER,
  pid INTEGER,
  pid_start INTEGER,
  note TEXT NOT NULL DEFAULT '',
  command TEXT NOT NULL DEFAULT '',
  wrapper_pid INTEGER,
  wrapper_start INTEGER,
  command_exited_ms INTEGER,
  queue_id INTEGER,
  job_processes TEXT NOT NULL DEFAULT '',
  forced_over TEXT NOT NULL DEFAULT '',
  job_cgroup TEXT,
  claim_namespace TEXT,
  claim_name TEXT,
  claim_uid TEXT,
  claim_pod TEXT,
  display_user TEXT NOT NULL DEFAULT '',
  share TEXT NOT NULL DEFAULT '',
  memory INTEGER NOT NULL DEFAULT 0,
  shareable INTEGER NOT NULL DEFAULT 0,
  CHECK ((kind = 'k8s') = (claim_uid IS NOT NULL AND claim_namespace IS NOT NULL AND
                           claim_name IS NOT NULL AND claim_pod IS NOT NULL)),
  CHECK ((share = '') = (memory = 0)),
  PRIMARY KEY (gpu, share)
) STRICT, WITHOUT ROWID;
INSERT INTO reservations_v10 (gpu, uid, user, kind, start_ms, expires_ms, pid, pid_start, note,
    command, wrapper_pid, wrapper_start, command_exited_ms, queue_id, job_processes, forced_over,
    job_cgroup, claim_namespace, claim_name, claim_uid, claim_pod, display_user)
  SELECT gpu, uid, user, kind, start_ms, expires_ms, pid, pid_start, note, command, wrapper_pid,
    wrapper_start, command_exited_ms, queue_id, job_processes, forced_over, job_cgroup,
    claim_namespace, claim_name, claim_uid, claim_pod, display_user
  FROM reservations;
DROP TABLE reservations;
ALTER TABLE reservations_v10 RENAME TO reservations;
CREATE INDEX reservations_by_claim ON reservations (claim_uid) WHERE claim_uid IS NOT NULL;
-- A share's bytes in the history, and a waiting request's bytes per GPU;
-- 0: whole GPUs.
ALTER TABLE history ADD COLUMN memory INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue ADD COLUMN memory INTEGER NOT NULL DEFAULT 0;
)sql",
    // 11: beside a share's bytes in the history, its GPU's shareable memory
    // when it was made, so `report` counts a share as its part of the GPU
    // (0: a whole GPU; a share that ended before this schema reads 0 too,
    // and is counted as a whole GPU, the most it could have been).
    R"sql(
ALTER TABLE history ADD COLUMN shareable INTEGER NOT NULL DEFAULT 0;
)sql",
};
static_assert(std::size(kMigrations) == kSchemaVersion);

}  // namespace

const char* SqliteMigration(int version) { return kMigrations[version]; }

}  // namespace canhazgpu::store
