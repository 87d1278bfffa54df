#include "store/memory_state_store.h"

#include <algorithm>

#include "core/strings.h"
#include "store/share_check.h"

namespace canhazgpu::store {
namespace {

class MemoryTransaction : public StateTransaction {
 public:
  MemoryTransaction(MemoryStateStore::State& state, bool writable)
      : state_(state), writable_(writable) {}

  absl::StatusOr<std::optional<PoolConfig>> GetPool() override { return state_.pool; }
  absl::Status SetPool(const PoolConfig& pool) override {
    if (!writable_) return ReadOnly();
    state_.pool = pool;
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<Reservation>> ListReservations() override {
    std::vector<Reservation> out;
    for (const auto& [gpu, r] : state_.reservations) out.push_back(r);
    return out;
  }
  absl::Status InsertReservation(const Reservation& r) override {
    if (!writable_) return ReadOnly();
    if ((r.kind == ReservationKind::kK8s) != r.claim.has_value()) {
      return absl::InvalidArgumentError(
          StrCat("gpu ", r.gpu, ": a k8s reservation, and only one, names a claim"));
    }
    std::vector<HeldPart> held;
    for (auto it = state_.reservations.lower_bound({r.gpu, ""});
         it != state_.reservations.end() && it->first.first == r.gpu; ++it) {
      held.push_back({.share = it->second.share,
                      .memory = it->second.memory,
                      .shareable = it->second.shareable});
    }
    absl::Status fits = CheckMayHold(held, r);
    if (!fits.ok()) return fits;
    state_.reservations.emplace(std::pair(r.gpu, r.share), r);
    return absl::OkStatus();
  }
  using StateTransaction::DeleteReservation;
  absl::Status DeleteReservation(int gpu, const std::string& share) override {
    if (!writable_) return ReadOnly();
    if (state_.reservations.erase({gpu, share}) == 0) {
      if (share.empty()) return absl::NotFoundError(StrCat("gpu ", gpu, " is not reserved"));
      return absl::NotFoundError(StrCat("gpu ", gpu, " has no share ", share));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<QueueEntry>> ListQueue() override { return state_.queue; }
  absl::StatusOr<int64_t> InsertQueueEntry(const QueueEntry& entry) override {
    if (!writable_) return ReadOnly();
    QueueEntry copy = entry;
    copy.id = ++state_.last_queue_id;
    state_.queue.push_back(copy);
    return copy.id;
  }
  absl::Status DeleteQueueEntry(int64_t id) override {
    if (!writable_) return ReadOnly();
    auto it = std::find_if(state_.queue.begin(), state_.queue.end(),
                           [&](const QueueEntry& e) { return e.id == id; });
    if (it == state_.queue.end())
      return absl::NotFoundError(StrCat("queue entry ", id, " is gone"));
    state_.queue.erase(it);
    return absl::OkStatus();
  }
  absl::Status AppendHistory(const HistoryRecord& record) override {
    if (!writable_) return ReadOnly();
    state_.history.push_back(record);
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<TimePoint>> LastReleased(int gpu) override {
    return Latest([&](const HistoryRecord& h) { return h.gpu == gpu; });
  }
  absl::StatusOr<std::optional<TimePoint>> LastUsedBy(uint32_t uid, int gpu) override {
    return Latest([&](const HistoryRecord& h) { return h.gpu == gpu && h.uid == uid; });
  }
  absl::Status AppendUsageSamples(const std::vector<UsageSample>& samples,
                                  TimePoint keep_after) override {
    if (!writable_) return ReadOnly();
    for (const UsageSample& u : samples) {
      std::erase_if(state_.samples,
                    [&](const UsageSample& s) { return s.gpu == u.gpu && s.at == u.at; });
      state_.samples.push_back(u);
    }
    std::erase_if(state_.samples, [&](const UsageSample& s) { return s.at < keep_after; });
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<UsageSample>> UsageSamplesSince(TimePoint since) override {
    std::vector<UsageSample> out;
    for (const UsageSample& s : state_.samples) {
      if (s.at >= since) out.push_back(s);
    }
    std::sort(out.begin(), out.end(), [](const UsageSample& a, const UsageSample& b) {
      return std::tie(a.gpu, a.at) < std::tie(b.gpu, b.at);
    });
    return out;
  }
  absl::StatusOr<std::optional<TimePoint>> LastUsageSample() override {
    std::optional<TimePoint> last;
    for (const UsageSample& s : state_.samples) {
      if (!last || s.at > *last) last = s.at;
    }
    return last;
  }
  absl::StatusOr<std::vector<HistoryRecord>> HistorySince(TimePoint since) override {
    std::vector<HistoryRecord> out;
    for (const HistoryRecord& h : state_.history) {
      if (h.end >= since) out.push_back(h);
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const HistoryRecord& a, const HistoryRecord& b) { return a.end < b.end; });
    return out;
  }

 private:
  template <typename Pred>
  std::optional<TimePoint> Latest(Pred pred) const {
    std::optional<TimePoint> latest;
    for (const HistoryRecord& h : state_.history) {
      if (pred(h) && (!latest || h.end > *latest)) latest = h.end;
    }
    return latest;
  }

  absl::Status ReadOnly() const {
    return absl::FailedPreconditionError("write in a read-only transaction");
  }

  MemoryStateStore::State& state_;
  bool writable_;
};

}  // namespace

absl::Status MemoryStateStore::Update(const TransactionFn& fn) {
  MutexLock lock(mu_);
  State copy = state_;
  MemoryTransaction txn(copy, /*writable=*/true);
  absl::Status status = fn(txn);
  if (status.ok()) state_ = std::move(copy);
  return status;
}

absl::Status MemoryStateStore::Read(const TransactionFn& fn) {
  MutexLock lock(mu_);
  State copy = state_;
  MemoryTransaction txn(copy, /*writable=*/false);
  return fn(txn);
}

}  // namespace canhazgpu::store
