// Kill at every kill point: a reserve and a release run in a child process
// that _exit()s just before its N-th write, sync, truncate, delete or lock
// call into SQLite's VFS (store/testing/fault_vfs.h), for every N until the
// operation completes. After each kill the state file must pass
// `PRAGMA integrity_check` and hold the state from before or from after the
// operation, never a mix: no double allocation, no lost reservation; and the
// next command must work on it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>

#include "alloc/reservations.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "host/testing/fake_clock.h"
#include "host/testing/fake_process_table.h"
#include "store/sqlite_state_store.h"
#include "store/testing/fault_vfs.h"

namespace canhazgpu::alloc {
namespace {

using std::chrono::hours;
using store::testing::FaultAction;
using store::testing::FaultVfs;
// gpu -> its holder ("alice"), or its shares' holders, sorted ("alice:20Gi,bob:10Gi").
using Held = std::map<int, std::string>;

// Far more than one reserve or release passes (about 20-40 each).
constexpr int kMaxKillPoints = 400;

class CrashConsistencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/crash_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    for (int i = 0; i < 4; ++i) {
      GpuInfo g;
      g.index = i;
      g.memory_total_bytes = 80000 * kMiB;
      gpus_.push_back(g);
    }
    auto base = store::SqliteStateStore::Open(Base(), {.create = true});
    ASSERT_TRUE(base.ok()) << base.status();
    ASSERT_TRUE(InitializePool(**base, {4, "fake", ""}, false, machine_).ok());
    ASSERT_TRUE(
        ReserveGpus(**base, gpus_, alice_, {.ids = {0}, .duration = hours(1)}, machine_).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Base() const { return dir_ + "/base/state.db"; }

  // A fresh copy of the base state (the file, its WAL and WAL index).
  std::string Trial() {
    std::string trial_dir = dir_ + "/trial";
    std::filesystem::remove_all(trial_dir);
    std::filesystem::create_directories(trial_dir);
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::filesystem::copy_file(Base() + suffix, trial_dir + "/state.db" + suffix);
    }
    return trial_dir + "/state.db";
  }

  // Runs `op` on `path` in a child that dies at kill point `at`; returns
  // true when the child got through `op`.
  bool RunKilledAt(const std::string& path, int at,
                   const std::function<absl::Status(store::StateStore&)>& op) {
    pid_t pid = fork();
    if (pid == 0) {
      FaultVfs::Register();
      FaultVfs::Arm(FaultAction::kExit, at);
      auto store = store::SqliteStateStore::Open(path, {.vfs = FaultVfs::kName});
      bool ok = store.ok() && op(**store).ok();
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status));
    const int code = WEXITSTATUS(status);
    EXPECT_TRUE(code == 0 || code == FaultVfs::kExitCode) << "kill point " << at << ": " << code;
    return code == 0;
  }

  // Checks the file after a kill and returns who holds which GPU.
  Held Check(const std::string& path, int at) {
    Held held;
    auto store = store::SqliteStateStore::Open(path);  // replays the WAL
    EXPECT_TRUE(store.ok()) << "kill point " << at << ": " << store.status();
    if (!store.ok()) return held;
    sqlite3* db = nullptr;
    sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr);
    std::string result = sqlite3_step(stmt) == SQLITE_ROW
                             ? reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))
                             : "no answer";
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    EXPECT_EQ(result, "ok") << "kill point " << at;
    EXPECT_TRUE((*store)
                    ->Read([&](store::StateTransaction& t) -> absl::Status {
                      ASSIGN_OR_RETURN(std::vector<Reservation> list, t.ListReservations());
                      std::map<int, std::vector<std::string>> holders;
                      for (const Reservation& r : list) {
                        holders[r.gpu].push_back(
                            r.IsShare() ? StrCat(r.user, ":", r.memory >> 30, "Gi") : r.user);
                      }
                      for (auto& [gpu, names] : holders) {
                        std::sort(names.begin(), names.end());
                        held[gpu] = Join(names, ",");
                      }
                      return absl::OkStatus();
                    })
                    .ok());
    // The next command works, and is given a GPU nobody holds.
    absl::StatusOr<std::vector<int>> next =
        ReserveGpus(**store, gpus_, carol_, {.count = 1, .duration = hours(1)}, machine_);
    EXPECT_TRUE(next.ok()) << "kill point " << at << ": " << next.status();
    if (next.ok()) {
      EXPECT_EQ(held.count(next->at(0)), 0u) << "kill point " << at;
    }
    return held;
  }

  // Kills `op` at every kill point in turn; returns how many there were.
  // `checkpoints`: the completed operation must have emptied the WAL.
  int KillEverywhere(const std::function<absl::Status(store::StateStore&)>& op, const Held& before,
                     const Held& after, bool checkpoints = false) {
    for (int at = 1; at <= kMaxKillPoints; ++at) {
      std::string path = Trial();
      bool completed = RunKilledAt(path, at, op);
      if (completed && checkpoints) {
        EXPECT_EQ(std::filesystem::file_size(path + "-wal"), 0u) << "checkpointed";
      }
      Held held = Check(path, at);
      if (completed) {
        EXPECT_EQ(held, after) << "completed";
        return at - 1;
      }
      EXPECT_TRUE(held == before || held == after) << "kill point " << at << ": a mix";
      if (HasFailure()) return at;
    }
    ADD_FAILURE() << "still not completed after " << kMaxKillPoints << " kill points";
    return kMaxKillPoints;
  }

  std::string dir_;
  host::FakeClock clock_;
  host::FakeProcessTable table_;
  Machine machine_{clock_, table_};
  std::vector<GpuInfo> gpus_;
  Caller alice_{1000, "alice"}, bob_{1001, "bob"}, carol_{1002, "carol"};
};

TEST_F(CrashConsistencyTest, ReserveKilledAtEveryKillPointIsAllOrNothing) {
  auto reserve = [this](store::StateStore& s) {
    return ReserveGpus(s, gpus_, bob_, {.ids = {1}, .duration = hours(1)}, machine_).status();
  };
  int points = KillEverywhere(reserve, {{0, "alice"}}, {{0, "alice"}, {1, "bob"}});
  EXPECT_GT(points, 5) << "the fault VFS saw the writes";
  RecordProperty("kill_points", points);
}

TEST_F(CrashConsistencyTest, ReleaseKilledAtEveryKillPointIsAllOrNothing) {
  auto release = [this](store::StateStore& s) {
    return ReleaseGpus(s, alice_, {0}, false, machine_).status();
  };
  int points = KillEverywhere(release, {{0, "alice"}}, {});
  EXPECT_GT(points, 5);
  RecordProperty("kill_points", points);
}

// The commit that takes the WAL past 64 frames checkpoints it (TRUNCATE):
// copying pages back into the file and emptying the WAL are kill points too.
TEST_F(CrashConsistencyTest, ReserveThatCheckpointsTheWalKilledAtEveryKillPoint) {
  // Frames in the WAL: a 32-byte header, then 24 bytes + one 4 KiB page each.
  auto frames = [this]() -> uintmax_t {
    uintmax_t size = std::filesystem::file_size(Base() + "-wal");
    return size < 32 ? 0 : (size - 32) / (24 + 4096);  // a checkpoint empties it
  };
  {
    auto base = store::SqliteStateStore::Open(Base());
    ASSERT_TRUE(base.ok());
    // Grow the WAL to just below the checkpoint with reserve/release cycles
    // (about 7 frames each), then to one frame below it with writes of one
    // page that change nothing (the pool as it is): however many pages a
    // cycle takes in this schema, the reserve below is the commit past 64.
    for (int i = 0; i < 100 && frames() < 56; ++i) {
      ASSERT_TRUE(
          ReserveGpus(**base, gpus_, bob_, {.ids = {2}, .duration = hours(1)}, machine_).ok());
      ASSERT_TRUE(ReleaseGpus(**base, bob_, {2}, false, machine_).ok());
    }
    for (int i = 0; i < 20 && frames() >= 56 && frames() < 63; ++i) {
      ASSERT_TRUE((*base)
                      ->Update([](store::StateTransaction& t) {
                        return t.SetPool({4, "fake", ""});
                      })
                      .ok());
    }
    ASSERT_EQ(frames(), 63u);
  }
  auto reserve = [this](store::StateStore& s) {
    return ReserveGpus(s, gpus_, bob_, {.ids = {1}, .duration = hours(1)}, machine_).status();
  };
  int points = KillEverywhere(reserve, {{0, "alice"}}, {{0, "alice"}, {1, "bob"}},
                              /*checkpoints=*/true);
  EXPECT_GT(points, 10);
  RecordProperty("kill_points", points);
}

// Shares (ADR 0018) at every kill point: a share added beside another on
// one GPU, and one of two shares released, are each all or nothing.
class ShareCrashConsistencyTest : public CrashConsistencyTest {
 protected:
  absl::Status Share(store::StateStore& s, const Caller& who, uint64_t gib) {
    return ReserveGpus(s, gpus_, who, {.ids = {1}, .duration = hours(1), .memory = gib << 30},
                       machine_)
        .status();
  }
  void AddToBase(const Caller& who, uint64_t gib) {
    auto base = store::SqliteStateStore::Open(Base());
    ASSERT_TRUE(base.ok());
    ASSERT_TRUE(Share(**base, who, gib).ok());
  }
};

TEST_F(ShareCrashConsistencyTest, ShareBesideAnotherKilledAtEveryKillPointIsAllOrNothing) {
  AddToBase(bob_, 10);
  auto share = [this](store::StateStore& s) { return Share(s, alice_, 20); };
  int points = KillEverywhere(share, {{0, "alice"}, {1, "bob:10Gi"}},
                              {{0, "alice"}, {1, "alice:20Gi,bob:10Gi"}});
  EXPECT_GT(points, 5);
  RecordProperty("kill_points", points);
}

TEST_F(ShareCrashConsistencyTest, ReleaseOfOneShareKilledAtEveryKillPointIsAllOrNothing) {
  AddToBase(bob_, 10);
  AddToBase(alice_, 20);
  auto release = [this](store::StateStore& s) {
    return ReleaseGpus(s, bob_, {1}, false, machine_).status();
  };
  int points = KillEverywhere(release, {{0, "alice"}, {1, "alice:20Gi,bob:10Gi"}},
                              {{0, "alice"}, {1, "alice:20Gi"}});
  EXPECT_GT(points, 5);
  RecordProperty("kill_points", points);
}

}  // namespace
}  // namespace canhazgpu::alloc
