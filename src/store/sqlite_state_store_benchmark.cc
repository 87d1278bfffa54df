// Cost of the store operations every command performs: one write
// transaction that inserts and one that deletes a reservation, and a
// read of all reservations, on a real SQLite file.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>

#include "store/sqlite_state_store.h"

namespace canhazgpu::store {
namespace {

class TempStore {
 public:
  TempStore() {
    char tmpl[] = "/tmp/store_bench.XXXXXX";
    dir_ = mkdtemp(tmpl);
    store_ = std::move(SqliteStateStore::Open(dir_ + "/state.db", {.create = true}).value());
    (void)store_->Update([](StateTransaction& t) { return t.SetPool({8, "fake", ""}); });
  }
  ~TempStore() {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  StateStore& store() { return *store_; }

 private:
  std::string dir_;
  std::unique_ptr<SqliteStateStore> store_;
};

void BM_ReserveReleaseTransactions(benchmark::State& state) {
  TempStore temp;
  Reservation r{.gpu = 3, .uid = 1000, .user = "alice", .start = FromEpochMillis(1)};
  for (auto _ : state) {
    absl::Status s =
        temp.store().Update([&](StateTransaction& t) { return t.InsertReservation(r); });
    s.Update(temp.store().Update([&](StateTransaction& t) {
      absl::Status d = t.DeleteReservation(3);
      return d.ok()
                 ? t.AppendHistory(EndReservation(r, FromEpochMillis(2), ReleaseReason::kReleased))
                 : d;
    }));
    if (!s.ok()) state.SkipWithError("transaction failed");
  }
}
BENCHMARK(BM_ReserveReleaseTransactions);

void BM_ReadReservations(benchmark::State& state) {
  TempStore temp;
  (void)temp.store().Update([](StateTransaction& t) {
    for (int gpu = 0; gpu < 8; ++gpu) {
      (void)t.InsertReservation({.gpu = gpu, .uid = 1, .user = "u", .start = FromEpochMillis(1)});
    }
    return absl::OkStatus();
  });
  for (auto _ : state) {
    absl::Status s = temp.store().Read([](StateTransaction& t) {
      auto list = t.ListReservations();
      benchmark::DoNotOptimize(list);
      return list.status();
    });
    if (!s.ok()) state.SkipWithError("read failed");
  }
}
BENCHMARK(BM_ReadReservations);

}  // namespace
}  // namespace canhazgpu::store

BENCHMARK_MAIN();
