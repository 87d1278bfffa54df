// The host's shared state: the GPU pool, who holds which GPU, and the history
// of ended reservations, and the queue of waiting requests. Every change happens inside Update(),
// which runs a function in one all-or-nothing transaction: readers never see half a reservation,
// and two processes racing for a GPU are serialised (the reservations table is keyed by GPU, so the
// loser's insert fails).
//
// Implementations: SqliteStateStore (the real one, one file shared by all
// users of the host) and MemoryStateStore (tests); a Redis store for
// multi-host pools can follow. All pass store_conformance_test.cc.
// A StateStore object is used by one thread at a time.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/reservation.h"

namespace canhazgpu::store {

// The view of the state inside one transaction. Valid only during the
// Update()/Read() call that handed it out.
class StateTransaction {
 public:
  virtual ~StateTransaction() = default;

  // nullopt until `admin` initialised the pool.
  virtual absl::StatusOr<std::optional<PoolConfig>> GetPool() = 0;
  virtual absl::Status SetPool(const PoolConfig& pool) = 0;

  // All reservations, ordered by GPU, then share id (a whole GPU first).
  virtual absl::StatusOr<std::vector<Reservation>> ListReservations() = 0;
  // The one check of sharing (ADR 0018): a GPU is held either whole by one
  // reservation or by shares whose memory sums to at most its shareable
  // memory. AlreadyExists when a whole GPU is asked for and the GPU is held
  // (whole or shared), when a share is asked for and the GPU is held whole,
  // or when the share id is taken; ResourceExhausted when the share does not
  // fit in what the GPU's shares leave; InvalidArgument for a share without
  // id, shareable memory, or with more memory than the GPU may share.
  virtual absl::Status InsertReservation(const Reservation& reservation) = 0;
  // NotFound when no such reservation exists. `share` is "" for a whole GPU.
  virtual absl::Status DeleteReservation(int gpu, const std::string& share) = 0;
  // The whole-GPU reservation of `gpu` (share "").
  absl::Status DeleteReservation(int gpu) { return DeleteReservation(gpu, ""); }

  // Waiting requests, oldest (the head) first.
  virtual absl::StatusOr<std::vector<QueueEntry>> ListQueue() = 0;
  // Appends `entry` (its id is ignored) and returns the id it was given.
  virtual absl::StatusOr<int64_t> InsertQueueEntry(const QueueEntry& entry) = 0;
  // NotFound when no such entry waits.
  virtual absl::Status DeleteQueueEntry(int64_t id) = 0;

  virtual absl::Status AppendHistory(const HistoryRecord& record) = 0;
  // When any reservation of `gpu` last ended.
  virtual absl::StatusOr<std::optional<TimePoint>> LastReleased(int gpu) = 0;
  // When a reservation of `gpu` by `uid` last ended.
  virtual absl::StatusOr<std::optional<TimePoint>> LastUsedBy(uint32_t uid, int gpu) = 0;
  // Records that ended at or after `since`, oldest first.
  virtual absl::StatusOr<std::vector<HistoryRecord>> HistorySince(TimePoint since) = 0;

  // Appends samples and drops those older than `keep_after`.
  virtual absl::Status AppendUsageSamples(const std::vector<UsageSample>& samples,
                                          TimePoint keep_after) = 0;
  // Samples taken at or after `since`, ordered by GPU, then time.
  virtual absl::StatusOr<std::vector<UsageSample>> UsageSamplesSince(TimePoint since) = 0;
  // When the last sample was taken, if ever.
  virtual absl::StatusOr<std::optional<TimePoint>> LastUsageSample() = 0;
};

using TransactionFn = std::function<absl::Status(StateTransaction&)>;

class StateStore {
 public:
  virtual ~StateStore() = default;

  // Runs `fn` in one write transaction, committed only when `fn` returns OK;
  // otherwise nothing it did is kept and its status is returned.
  virtual absl::Status Update(const TransactionFn& fn) = 0;

  // Runs `fn` on a consistent read-only snapshot; writes inside fail.
  virtual absl::Status Read(const TransactionFn& fn) = 0;
};

}  // namespace canhazgpu::store
