// An in-memory StateStore for tests: Update() works on a copy of the state
// and swaps it in on success, which gives the same all-or-nothing behaviour
// as a database transaction. Thread-safe (one mutex).
#pragma once

#include <map>
#include <string>
#include <utility>

#include "core/mutex.h"
#include "store/state_store.h"

namespace canhazgpu::store {

class MemoryStateStore : public StateStore {
 public:
  absl::Status Update(const TransactionFn& fn) override;
  absl::Status Read(const TransactionFn& fn) override;

  struct State {
    std::optional<PoolConfig> pool;
    // Keyed by (gpu, share id): ordered as ListReservations() returns them.
    std::map<std::pair<int, std::string>, Reservation> reservations;
    std::vector<HistoryRecord> history;
    std::vector<UsageSample> samples;
    std::vector<QueueEntry> queue;
    int64_t last_queue_id = 0;
  };

 private:
  Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_);
};

}  // namespace canhazgpu::store
