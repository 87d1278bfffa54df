#include "store/sqlite_state_store.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "core/clock.h"
#include "core/gpu.h"
#include "core/gpu_ids.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "store/share_check.h"
#include "store/sqlite_migrations.h"
#include "store/sqlite_statement.h"
#include "store/state_file.h"

namespace canhazgpu::store {
namespace {

// 'CHGP': marks the file as ours, so a foreign SQLite file is not migrated.
constexpr int kApplicationId = 0x43484750;

std::string KindText(ReservationKind kind) { return std::string(KindName(kind)); }

// Times and durations as read from the file. A damaged file may hold any
// integer, and the clock counts nanoseconds in 64 bits (until 2262): a larger
// value would overflow converting to it (undefined behaviour, found by
// store_fuzzer). Anything past 2100 is damage, which also leaves room to add
// a duration to a time.
class FileTimes {
 public:
  TimePoint At(int64_t ms) { return Check(ms) ? FromEpochMillis(ms) : TimePoint(); }
  Duration For(int64_t ms) { return Check(ms) ? Duration(ms) : Duration(); }
  bool bad() const { return bad_; }

 private:
  static constexpr int64_t kMaxMillis = 4102444800000;  // 2100-01-01T00:00:00Z
  bool Check(int64_t ms) {
    bad_ = bad_ || ms < -kMaxMillis || ms > kMaxMillis;
    return !bad_;
  }
  bool bad_ = false;
};

class SqliteTransaction : public StateTransaction {
 public:
  SqliteTransaction(StatementCache& statements, const std::string& path)
      : db_(statements.db()), statements_(statements), path_(path) {}

  absl::StatusOr<std::optional<PoolConfig>> GetPool() override {
    Statement s(statements_, path_, "SELECT gpu_count, provider, fake_host FROM pool WHERE id = 1");
    if (!s.Step()) {
      RETURN_IF_ERROR(s.status());
      return std::optional<PoolConfig>();
    }
    // A pool written before the bound existed (admin --gpus 2147483647) would
    // make every command loop over its ids; it must be initialized again.
    const int64_t count = s.Int(0);
    if (count < 1 || count > kMaxGpus) {
      return absl::FailedPreconditionError(
          StrCat("state file ", path_, ": pool of ", count, " GPUs; at most ", kMaxGpus,
                 " are supported: run 'canhazgpu admin --force' to set it again"));
    }
    return PoolConfig{static_cast<int>(count), s.Text(1), s.Text(2)};
  }

  absl::Status SetPool(const PoolConfig& pool) override {
    return Statement(statements_, path_,
                     "INSERT OR REPLACE INTO pool (id, gpu_count, provider, fake_host) "
                     "VALUES (1, ?, ?, ?)")
        .Bind(pool.gpu_count)
        .Bind(pool.provider)
        .Bind(pool.fake_host)
        .Exec();
  }

  absl::StatusOr<std::vector<Reservation>> ListReservations() override {
    Statement s(
        statements_, path_,
        "SELECT gpu, uid, user, kind, start_ms, expires_ms, pid, pid_start, note, command, "
        "wrapper_pid, wrapper_start, command_exited_ms, queue_id, job_processes, forced_over, "
        "job_cgroup, claim_namespace, claim_name, claim_uid, claim_pod, display_user, share, "
        "memory, shareable FROM reservations ORDER BY gpu, share");
    std::vector<Reservation> out;
    while (s.Step()) {
      Reservation r;
      r.gpu = static_cast<int>(s.Int(0));
      r.uid = static_cast<uint32_t>(s.Int(1));
      r.user = s.Text(2);
      std::optional<ReservationKind> kind = ParseKind(s.Text(3));
      if (!kind) return absl::DataLossError(StrCat("state file ", path_, ": bad kind"));
      r.kind = *kind;
      FileTimes times;
      r.start = times.At(s.Int(4));
      if (auto expires = s.OptionalInt(5)) r.expires = times.At(*expires);
      auto pid = s.OptionalInt(6);
      auto pid_start = s.OptionalInt(7);
      if (pid && pid_start) r.process = ProcessRef{*pid, static_cast<uint64_t>(*pid_start)};
      r.note = s.Text(8);
      r.command = s.Text(9);
      auto wrapper_pid = s.OptionalInt(10);
      auto wrapper_start = s.OptionalInt(11);
      if (wrapper_pid && wrapper_start) {
        r.wrapper = ProcessRef{*wrapper_pid, static_cast<uint64_t>(*wrapper_start)};
      }
      if (auto exited = s.OptionalInt(12)) r.command_exited = times.At(*exited);
      r.queue_id = s.OptionalInt(13);
      if (times.bad()) {
        return absl::DataLossError(
            StrCat("state file ", path_, ": bad time in the reservation of gpu ", r.gpu));
      }
      std::optional<std::vector<ProcessRef>> job_processes = ParseProcessRefs(s.Text(14));
      if (!job_processes) {
        return absl::DataLossError(StrCat("state file ", path_, ": bad job_processes"));
      }
      r.job_processes = *std::move(job_processes);
      r.forced_over = s.Text(15);
      r.job_cgroup = s.OptionalText(16);
      std::optional<std::string> claim_uid = s.OptionalText(19);
      if ((r.kind == ReservationKind::kK8s) != claim_uid.has_value()) {
        return absl::DataLossError(
            StrCat("state file ", path_, ": bad claim in the reservation of gpu ", r.gpu));
      }
      if (claim_uid) {
        r.claim = KubeClaimRef{.namespace_name = s.OptionalText(17).value_or(""),
                               .name = s.OptionalText(18).value_or(""),
                               .uid = *std::move(claim_uid),
                               .pod = s.OptionalText(20).value_or("")};
      }
      r.display_user = s.Text(21);
      r.share = s.Text(22);
      r.memory = static_cast<uint64_t>(s.Int(23));
      r.shareable = static_cast<uint64_t>(s.Int(24));
      out.push_back(std::move(r));
    }
    RETURN_IF_ERROR(s.status());
    return out;
  }

  absl::Status InsertReservation(const Reservation& r) override {
    std::optional<int64_t> expires, pid, pid_start, wrapper_pid, wrapper_start, exited;
    if (r.expires) expires = ToEpochMillis(*r.expires);
    if (r.process) {
      pid = r.process->pid;
      pid_start = static_cast<int64_t>(r.process->start_ticks);
    }
    if (r.wrapper) {
      wrapper_pid = r.wrapper->pid;
      wrapper_start = static_cast<int64_t>(r.wrapper->start_ticks);
    }
    if (r.command_exited) exited = ToEpochMillis(*r.command_exited);
    // The claim is stored exactly for k8s reservations (the table checks it).
    if ((r.kind == ReservationKind::kK8s) != r.claim.has_value()) {
      return absl::InvalidArgumentError(
          StrCat("gpu ", r.gpu, ": a k8s reservation, and only one, names a claim"));
    }
    std::optional<std::string> claim_namespace, claim_name, claim_uid, claim_pod;
    if (r.claim) {
      claim_namespace = r.claim->namespace_name;
      claim_name = r.claim->name;
      claim_uid = r.claim->uid;
      claim_pod = r.claim->pod;
    }
    RETURN_IF_ERROR(CheckAgainstHeld(r));
    absl::Status status =
        Statement(
            statements_, path_,
            "INSERT INTO reservations (gpu, uid, user, kind, start_ms, expires_ms, pid, "
            "pid_start, note, command, wrapper_pid, wrapper_start, command_exited_ms, "
            "queue_id, job_processes, forced_over, job_cgroup, claim_namespace, claim_name, "
            "claim_uid, claim_pod, display_user, share, memory, shareable) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            .Bind(r.gpu)
            .Bind(static_cast<int64_t>(r.uid))
            .Bind(r.user)
            .Bind(KindText(r.kind))
            .Bind(ToEpochMillis(r.start))
            .Bind(expires)
            .Bind(pid)
            .Bind(pid_start)
            .Bind(r.note)
            .Bind(r.command)
            .Bind(wrapper_pid)
            .Bind(wrapper_start)
            .Bind(exited)
            .Bind(r.queue_id)
            .Bind(FormatProcessRefs(r.job_processes))
            .Bind(r.forced_over)
            .BindOptional(r.job_cgroup)
            .BindOptional(claim_namespace)
            .BindOptional(claim_name)
            .BindOptional(claim_uid)
            .BindOptional(claim_pod)
            .Bind(r.display_user)
            .Bind(r.share)
            .Bind(static_cast<int64_t>(r.memory))
            .Bind(static_cast<int64_t>(r.shareable))
            .Exec();
    if (absl::IsAlreadyExists(status)) {
      return absl::AlreadyExistsError(StrCat("gpu ", r.gpu, " is already reserved"));
    }
    return status;
  }

  using StateTransaction::DeleteReservation;
  absl::Status DeleteReservation(int gpu, const std::string& share) override {
    RETURN_IF_ERROR(
        Statement(statements_, path_, "DELETE FROM reservations WHERE gpu = ? AND share = ?")
            .Bind(gpu)
            .Bind(share)
            .Exec());
    if (sqlite3_changes(db_) == 0) {
      if (share.empty()) return absl::NotFoundError(StrCat("gpu ", gpu, " is not reserved"));
      return absl::NotFoundError(StrCat("gpu ", gpu, " has no share ", share));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<QueueEntry>> ListQueue() override {
    Statement s(statements_, path_,
                "SELECT id, uid, user, kind, count, ids, duration_ms, force, note, command, "
                "waiter_pid, waiter_start, enqueued_ms, selector, display_user, eligible, memory "
                "FROM queue ORDER BY id");
    std::vector<QueueEntry> out;
    while (s.Step()) {
      QueueEntry e;
      e.id = s.Int(0);
      e.uid = static_cast<uint32_t>(s.Int(1));
      e.user = s.Text(2);
      std::optional<ReservationKind> kind = ParseKind(s.Text(3));
      std::string id_text = s.Text(5);
      absl::StatusOr<std::vector<int>> ids =
          id_text.empty() ? std::vector<int>() : ParseGpuIds(id_text);
      std::optional<std::string> eligible_text = s.OptionalText(15);
      absl::StatusOr<std::vector<int>> eligible = !eligible_text || eligible_text->empty()
                                                      ? std::vector<int>()
                                                      : ParseGpuIds(*eligible_text);
      if (!kind || !ids.ok() || !eligible.ok()) {
        return absl::DataLossError(StrCat("state file ", path_, ": bad queue entry ", e.id));
      }
      e.kind = *kind;
      e.count = static_cast<int>(s.Int(4));
      e.ids = *ids;
      FileTimes times;
      if (auto ms = s.OptionalInt(6)) e.duration = times.For(*ms);
      e.force = s.Int(7) != 0;
      e.note = s.Text(8);
      e.command = s.Text(9);
      e.waiter = ProcessRef{s.Int(10), static_cast<uint64_t>(s.Int(11))};
      e.enqueued = times.At(s.Int(12));
      e.selector = s.Text(13);
      e.display_user = s.Text(14);
      if (eligible_text) e.eligible = *eligible;
      e.memory = static_cast<uint64_t>(s.Int(16));
      if (times.bad()) {
        return absl::DataLossError(
            StrCat("state file ", path_, ": bad time in queue entry ", e.id));
      }
      out.push_back(std::move(e));
    }
    RETURN_IF_ERROR(s.status());
    return out;
  }

  absl::StatusOr<int64_t> InsertQueueEntry(const QueueEntry& e) override {
    std::optional<int64_t> duration_ms;
    if (e.duration) {
      duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(*e.duration).count();
    }
    RETURN_IF_ERROR(Statement(statements_, path_,
                              "INSERT INTO queue (uid, user, kind, count, ids, duration_ms, force, "
                              "note, command, waiter_pid, waiter_start, enqueued_ms, selector, "
                              "display_user, eligible, memory) "
                              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
                        .Bind(static_cast<int64_t>(e.uid))
                        .Bind(e.user)
                        .Bind(KindText(e.kind))
                        .Bind(e.count)
                        .Bind(JoinGpuIds(e.ids))
                        .Bind(duration_ms)
                        .Bind(e.force ? 1 : 0)
                        .Bind(e.note)
                        .Bind(e.command)
                        .Bind(e.waiter.pid)
                        .Bind(static_cast<int64_t>(e.waiter.start_ticks))
                        .Bind(ToEpochMillis(e.enqueued))
                        .Bind(e.selector)
                        .Bind(e.display_user)
                        .BindOptional(e.eligible
                                          ? std::optional<std::string>(JoinGpuIds(*e.eligible))
                                          : std::nullopt)
                        .Bind(static_cast<int64_t>(e.memory))
                        .Exec());
    return sqlite3_last_insert_rowid(db_);
  }

  absl::Status DeleteQueueEntry(int64_t id) override {
    RETURN_IF_ERROR(
        Statement(statements_, path_, "DELETE FROM queue WHERE id = ?").Bind(id).Exec());
    if (sqlite3_changes(db_) == 0) {
      return absl::NotFoundError(StrCat("queue entry ", id, " is gone"));
    }
    return absl::OkStatus();
  }

  absl::Status AppendHistory(const HistoryRecord& h) override {
    return Statement(statements_, path_,
                     "INSERT INTO history (gpu, uid, user, kind, start_ms, end_ms, reason, note, "
                     "memory, shareable) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .Bind(h.gpu)
        .Bind(static_cast<int64_t>(h.uid))
        .Bind(h.user)
        .Bind(KindText(h.kind))
        .Bind(ToEpochMillis(h.start))
        .Bind(ToEpochMillis(h.end))
        .Bind(ReasonName(h.reason))
        .Bind(h.note)
        .Bind(static_cast<int64_t>(h.memory))
        .Bind(static_cast<int64_t>(h.shareable))
        .Exec();
  }

  absl::StatusOr<std::optional<TimePoint>> LastReleased(int gpu) override {
    Statement s(statements_, path_, "SELECT MAX(end_ms) FROM history WHERE gpu = ?");
    s.Bind(gpu);
    return MaybeTime(s);
  }

  absl::StatusOr<std::optional<TimePoint>> LastUsedBy(uint32_t uid, int gpu) override {
    Statement s(statements_, path_, "SELECT MAX(end_ms) FROM history WHERE uid = ? AND gpu = ?");
    s.Bind(static_cast<int64_t>(uid)).Bind(gpu);
    return MaybeTime(s);
  }

  absl::Status AppendUsageSamples(const std::vector<UsageSample>& samples,
                                  TimePoint keep_after) override {
    for (const UsageSample& u : samples) {
      RETURN_IF_ERROR(
          Statement(statements_, path_,
                    "INSERT OR REPLACE INTO usage_samples (gpu, at_ms, memory_used, busy) "
                    "VALUES (?, ?, ?, ?)")
              .Bind(u.gpu)
              .Bind(ToEpochMillis(u.at))
              .Bind(static_cast<int64_t>(u.memory_used_bytes))
              .Bind(static_cast<int64_t>(u.busy))
              .Exec());
    }
    return Statement(statements_, path_, "DELETE FROM usage_samples WHERE at_ms < ?")
        .Bind(ToEpochMillis(keep_after))
        .Exec();
  }

  absl::StatusOr<std::vector<UsageSample>> UsageSamplesSince(TimePoint since) override {
    Statement s(statements_, path_,
                "SELECT gpu, at_ms, memory_used, busy FROM usage_samples WHERE at_ms >= ? "
                "ORDER BY gpu, at_ms");
    s.Bind(ToEpochMillis(since));
    std::vector<UsageSample> out;
    while (s.Step()) {
      FileTimes times;
      out.push_back({.gpu = static_cast<int>(s.Int(0)),
                     .at = times.At(s.Int(1)),
                     .memory_used_bytes = static_cast<uint64_t>(s.Int(2)),
                     .busy = s.Int(3) != 0});
      if (times.bad())
        return absl::DataLossError(StrCat("state file ", path_, ": bad sample time"));
    }
    RETURN_IF_ERROR(s.status());
    return out;
  }

  absl::StatusOr<std::optional<TimePoint>> LastUsageSample() override {
    Statement s(statements_, path_, "SELECT MAX(at_ms) FROM usage_samples");
    return MaybeTime(s);
  }

  absl::StatusOr<std::vector<HistoryRecord>> HistorySince(TimePoint since) override {
    Statement s(statements_, path_,
                "SELECT gpu, uid, user, kind, start_ms, end_ms, reason, note, memory, shareable "
                "FROM history "
                "WHERE end_ms >= ? ORDER BY end_ms, id");
    s.Bind(ToEpochMillis(since));
    std::vector<HistoryRecord> out;
    while (s.Step()) {
      HistoryRecord h;
      h.gpu = static_cast<int>(s.Int(0));
      h.uid = static_cast<uint32_t>(s.Int(1));
      h.user = s.Text(2);
      h.kind = ParseKind(s.Text(3)).value_or(ReservationKind::kManual);
      FileTimes times;
      h.start = times.At(s.Int(4));
      h.end = times.At(s.Int(5));
      if (times.bad())
        return absl::DataLossError(StrCat("state file ", path_, ": bad history time"));
      h.reason = ParseReason(s.Text(6)).value_or(ReleaseReason::kReleased);
      h.note = s.Text(7);
      h.memory = static_cast<uint64_t>(s.Int(8));
      h.shareable = static_cast<uint64_t>(s.Int(9));
      out.push_back(std::move(h));
    }
    RETURN_IF_ERROR(s.status());
    return out;
  }

 private:
  // CheckMayHold() against what the store holds of r.gpu.
  absl::Status CheckAgainstHeld(const Reservation& r) {
    ASSIGN_OR_RETURN(std::vector<HeldPart> held, HeldOf(r.gpu));
    return CheckMayHold(held, r);
  }

  // The GPU's current reservations, for CheckMayHold().
  absl::StatusOr<std::vector<HeldPart>> HeldOf(int gpu) {
    Statement s(statements_, path_,
                "SELECT share, memory, shareable FROM reservations WHERE gpu = ? ORDER BY share");
    s.Bind(gpu);
    std::vector<HeldPart> out;
    while (s.Step()) {
      out.push_back({.share = s.Text(0),
                     .memory = static_cast<uint64_t>(s.Int(1)),
                     .shareable = static_cast<uint64_t>(s.Int(2))});
    }
    RETURN_IF_ERROR(s.status());
    return out;
  }

  absl::StatusOr<std::optional<TimePoint>> MaybeTime(Statement& s) {
    std::optional<TimePoint> out;
    FileTimes times;
    if (s.Step()) {
      if (auto ms = s.OptionalInt(0)) out = times.At(*ms);
    }
    RETURN_IF_ERROR(s.status());
    if (times.bad()) return absl::DataLossError(StrCat("state file ", path_, ": bad time"));
    return out;
  }

  sqlite3* db_;
  StatementCache& statements_;
  const std::string& path_;
};

absl::Status ExecSql(sqlite3* db, const std::string& path, const char* sql) {
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
  sqlite3_free(error);
  return rc == SQLITE_OK ? absl::OkStatus() : SqliteError(db, rc, path);
}

absl::StatusOr<int64_t> PragmaInt(sqlite3* db, const std::string& path, const char* pragma) {
  Statement s(db, path, pragma);
  int64_t value = s.Step() ? s.Int(0) : 0;
  RETURN_IF_ERROR(s.status());
  return value;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteStateStore>> SqliteStateStore::Open(const std::string& path,
                                                                         SqliteOptions options) {
  if (options.create) {
    bool dir_created = false;
    RETURN_IF_ERROR(CreateStateDirectory(path, &dir_created));
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 && errno == ENOENT) RETURN_IF_ERROR(CreateStateFile(path));
  }
  absl::StatusOr<StateFileInfo> info = InspectStateFile(path);
  if (absl::IsNotFound(info.status())) {
    return absl::FailedPreconditionError(
        StrCat("no state file at ", path, ": run 'canhazgpu admin' to initialize the GPU pool"));
  }
  RETURN_IF_ERROR(info.status());
  if (options.create) RETURN_IF_ERROR(CheckMayInitialize(path, *info, geteuid()));
  // A file we may not write (its mode, a read-only file system) is opened
  // read-only: views still work, and every Update() fails saying why.
  const bool read_only = options.read_only || !info->writable;
  // NOFOLLOW: SQLite itself also refuses a path that became a link since.
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW |
              (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE);
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, options.vfs);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteError(db, rc, path);
    sqlite3_close(db);
    return status;
  }
  std::unique_ptr<SqliteStateStore> store(new SqliteStateStore(db, path, options.busy_timeout));
  store->read_only_ = read_only;
  sqlite3_busy_handler(db, &SqliteStateStore::WaitForLock, store.get());
  // Keep the -wal file between connections: in a 1777 directory another
  // user's connection could not delete it anyway.
  int persist = 1;
  sqlite3_file_control(db, nullptr, SQLITE_FCNTL_PERSIST_WAL, &persist);
  // Every command is a process with one short connection. Checkpointing when
  // the last connection closes cost each command 3-4 fsyncs; instead the
  // commit that takes the WAL past kCheckpointFrames checkpoints it.
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  sqlite3_wal_hook(db, &SqliteStateStore::CheckpointWhenLarge, store.get());
  RETURN_IF_ERROR(
      store->Migrate(options.create, options.migrate_to_for_testing > 0
                                         ? std::min(options.migrate_to_for_testing, kSchemaVersion)
                                         : kSchemaVersion));
  return store;
}

SqliteStateStore::SqliteStateStore(sqlite3* db, std::string path,
                                   std::chrono::milliseconds busy_timeout)
    : db_(db),
      statements_(std::make_unique<StatementCache>(db)),
      path_(std::move(path)),
      busy_timeout_(busy_timeout) {}

SqliteStateStore::~SqliteStateStore() {
  statements_->Clear();  // sqlite3_close refuses while statements are open
  sqlite3_close(db_);
}

int SqliteStateStore::WaitForLock(void* self, int attempt) {
  auto* store = static_cast<SqliteStateStore*>(self);
  auto now = RealClock().MonoNow();
  if (attempt == 0) store->waiting_since_ = now;
  if (now - store->waiting_since_ >= store->busy_timeout_) return 0;  // SQLITE_BUSY
  // SQLite's own busy timeout sleeps 1, 2, 5, 10... ms, while a transaction
  // holds the lock for ~0.1 ms: with many commands at once the CPUs sat idle.
  // Start at 50 us and back off to 1 ms; the jitter keeps waiters from
  // waking in lockstep.
  int64_t base_us = std::min<int64_t>(int64_t{50} << std::min(attempt, 5), 1000);
  if (attempt == 0)
    store->random_.seed(static_cast<unsigned>(getpid()) ^ now.time_since_epoch().count());
  std::uniform_int_distribution<int64_t> jitter(0, base_us / 2);
  RealClock().SleepFor(std::chrono::microseconds(base_us + jitter(store->random_)));
  return 1;
}

int SqliteStateStore::CheckpointWhenLarge(void* self, sqlite3* db, const char* schema, int frames) {
  if (frames < kCheckpointFrames) return SQLITE_OK;
  // TRUNCATE, not SQLite's default PASSIVE: a new process rebuilds the WAL
  // index from the WAL file, forgetting what was already copied back, so only
  // an emptied WAL stops every later process from replaying it. Without a
  // busy handler: if readers are in the way, a later commit tries again
  // rather than this command waiting for them.
  sqlite3_busy_handler(db, nullptr, nullptr);
  sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  sqlite3_busy_handler(db, &SqliteStateStore::WaitForLock, self);
  return SQLITE_OK;  // the commit itself succeeded either way
}

absl::Status SqliteStateStore::Migrate(bool create, int target) {
  // Reading the header also tells a corrupted or foreign file apart.
  ASSIGN_OR_RETURN(int64_t app_id, PragmaInt(db_, path_, "PRAGMA application_id"));
  ASSIGN_OR_RETURN(int64_t version, PragmaInt(db_, path_, "PRAGMA user_version"));
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(StrCat(
        "state file ", path_, " has schema version ", version,
        ", newer than this canhazgpu understands (", kSchemaVersion, "); upgrade canhazgpu"));
  }
  // user_version is signed: a negative one (store_fuzzer found it) would
  // index the migrations before their start.
  if (version < 0 || (version > 0 && app_id != kApplicationId)) {
    return absl::DataLossError(StrCat("state file ", path_, " is not a canhazgpu database"));
  }
  if (version == 0) {
    // A file we did not write: only an empty one (admin just created it)
    // becomes a pool; a foreign SQLite database is left as it is.
    ASSIGN_OR_RETURN(int64_t objects, PragmaInt(db_, path_, "SELECT count(*) FROM sqlite_master"));
    if (objects > 0 || app_id != 0) {
      return absl::DataLossError(StrCat("state file ", path_,
                                        " is not a canhazgpu database (a foreign SQLite file); "
                                        "refusing to change it"));
    }
  }
  if (version == 0 && !create) {
    return absl::FailedPreconditionError(StrCat(
        "state file ", path_, " is not initialized: run 'canhazgpu admin' to initialize the pool"));
  }
  // synchronous=NORMAL in WAL mode: a crash of any process never corrupts or
  // loses a committed transaction; only power loss can drop the last ones.
  // A journal_size_limit makes the last connection's checkpoint truncate the
  // persistent WAL: otherwise every new process (each command is one) would
  // replay all of its old frames when it opens the file.
  RETURN_IF_ERROR(ExecSql(db_, path_,
                          "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                          "PRAGMA journal_size_limit=1048576;"));
  if (version >= target) return absl::OkStatus();
  RETURN_IF_ERROR(ExecSql(db_, path_, "BEGIN IMMEDIATE"));
  // Another process may have migrated while we waited for the lock.
  absl::StatusOr<int64_t> current = PragmaInt(db_, path_, "PRAGMA user_version");
  absl::Status status = current.status();
  if (status.ok() && *current < 0) {
    status = absl::DataLossError(StrCat("state file ", path_, " is not a canhazgpu database"));
  }
  for (int64_t v = current.value_or(target); status.ok() && v < target; ++v) {
    status = ExecSql(db_, path_, SqliteMigration(static_cast<int>(v)));
  }
  if (status.ok()) {
    status = ExecSql(db_, path_,
                     StrCat("PRAGMA application_id=", kApplicationId, "; PRAGMA user_version=",
                            std::max<int64_t>(target, current.value_or(0)), "; COMMIT")
                         .c_str());
  }
  if (!status.ok()) ExecSql(db_, path_, "ROLLBACK").IgnoreError();
  return status;
}

absl::Status SqliteStateStore::Run(const char* begin, const TransactionFn& fn) {
  RETURN_IF_ERROR(ExecSql(db_, path_, begin));
  SqliteTransaction txn(*statements_, path_);
  absl::Status status = fn(txn);
  if (status.ok()) status = ExecSql(db_, path_, "COMMIT");
  if (!status.ok()) ExecSql(db_, path_, "ROLLBACK").IgnoreError();
  return status;
}

absl::Status SqliteStateStore::Update(const TransactionFn& fn) {
  if (read_only_) {
    return absl::PermissionDeniedError(
        StrCat("cannot write state file ", path_,
               ": the file or its file system is read-only for this user"));
  }
  return Run("BEGIN IMMEDIATE", fn);
}

absl::Status SqliteStateStore::Read(const TransactionFn& fn) {
  // query_only makes any write inside `fn` fail instead of taking the lock.
  RETURN_IF_ERROR(ExecSql(db_, path_, "PRAGMA query_only=1"));
  absl::Status status = Run("BEGIN", fn);
  ExecSql(db_, path_, "PRAGMA query_only=0").IgnoreError();
  return status;
}

}  // namespace canhazgpu::store
