#include "alloc/backfill.h"

#include <algorithm>
#include <tuple>

#include "alloc/reservations_internal.h"
#include "core/strings.h"
#include "store/share_check.h"

namespace canhazgpu::alloc {
namespace {

// Whether `e` could take `s` now, GPUs it holds aside.
bool FreeFor(const QueueEntry& e, const GpuStatus& s) {
  if (s.state == GpuState::kAvailable) return true;
  if (!e.force || s.state != GpuState::kUnreserved) return false;
  // As Candidates(): --force overrides only the user's own processes (root: any).
  return e.uid == 0 || internal::ForcedOver(s, Caller{e.uid, e.user}).empty();
}

// Sort key for a count entry's choice among more GPUs than it lacks: free
// before forced, then those no later waiter asks for by id or selector, then
// longest free (never released first), then lowest id.
auto LeastWantedFirst(const GpuStatus& s, bool wanted_later) {
  int64_t released = s.last_released ? ToEpochMillis(*s.last_released) : INT64_MIN;
  return std::make_tuple(s.state != GpuState::kAvailable, wanted_later, released, s.gpu);
}

// What whole-GPU entry `e` still lacks beyond what it holds and the free
// GPUs it would take now (`claimed`).
int LackingBeyondClaims(const QueueEntry& e, const std::vector<GpuStatus>& status,
                        const std::map<int, const QueueEntry*>& claimed) {
  int lacking = e.count;
  for (const GpuStatus& s : status) {
    lacking -= s.reservation && s.reservation->queue_id == e.id;
  }
  for (const auto& [gpu, by] : claimed) lacking -= by == &e;
  return lacking;
}

// Whole-GPU entry `e` waits to have some shared GPUs whole: it keeps as many
// of those it considers as it still lacks, the least used first (they drain
// first; a kept GPU's use only falls, so the choice settles), and no share
// behind it goes there.
void KeepSharedGpusWhole(const QueueEntry& e, const std::vector<GpuStatus>& status,
                         const std::map<int, const QueueEntry*>& claimed,
                         std::vector<ShareRoom>& rooms) {
  int lacking = LackingBeyondClaims(e, status, claimed);
  if (lacking <= 0) return;
  std::vector<ShareRoom*> shared;
  for (ShareRoom& r : rooms) {
    if (r.shareable && r.used > 0 && Considers(e, r.gpu)) shared.push_back(&r);
  }
  std::sort(shared.begin(), shared.end(), [](const ShareRoom* a, const ShareRoom* b) {
    return std::make_tuple(a->used, a->gpu) < std::make_tuple(b->used, b->gpu);
  });
  shared.resize(std::min(shared.size(), static_cast<size_t>(lacking)));
  for (ShareRoom* r : shared) {
    r->shareable = false;
    r->reason = StrCat("wanted whole by ", e.user, ", who queued first (waiting for its shares)");
    r->kept_by.push_back(e.id);
  }
}

// Share entry `e` keeps its memory on the GPUs it would get now, or else on
// those it waits for: its ids, or the shareable GPUs it considers that could
// ever hold it, the most room first.
void KeepRoomForShare(const QueueEntry& e, std::vector<ShareRoom>& rooms) {
  const ShareWant want{.count = e.count, .memory = e.memory, .ids = e.ids, .eligible = e.eligible};
  absl::StatusOr<std::vector<int>> fits = ChooseShareGpus(rooms, {}, want);
  std::vector<int> kept;
  if (fits.ok()) {
    kept = *fits;
  } else if (absl::IsResourceExhausted(fits.status())) {
    std::vector<const ShareRoom*> waits_for;
    for (const ShareRoom& r : rooms) {
      if (r.shareable && r.limit >= e.memory && Considers(e, r.gpu)) waits_for.push_back(&r);
    }
    std::sort(waits_for.begin(), waits_for.end(), [](const ShareRoom* a, const ShareRoom* b) {
      return std::make_tuple(b->Left(), a->gpu) < std::make_tuple(a->Left(), b->gpu);
    });
    const size_t needed = e.ids.empty() ? static_cast<size_t>(e.count) : e.ids.size();
    for (const ShareRoom* r : waits_for) {
      if (kept.size() < needed) kept.push_back(r->gpu);
    }
  }  // else it can never be served (it was refused, not queued): it keeps nothing
  for (int gpu : kept) {
    ShareRoom& r = rooms[static_cast<size_t>(gpu)];
    r.used += e.memory;
    r.whole_free = false;
    r.kept_for.push_back(
        StrCat(store::FormatBytes(e.memory), " kept for ", e.user, ", who queued first"));
    r.kept_by.push_back(e.id);
  }
}

}  // namespace

std::vector<ShareRoom> ShareRoomsBehind(const std::vector<QueueEntry>& queue,
                                        const std::vector<GpuStatus>& status,
                                        std::optional<int64_t> before) {
  std::vector<ShareRoom> rooms = RoomsOf(status);
  const std::map<int, const QueueEntry*> claimed = ClaimedAhead(queue, status, before);
  for (const auto& [gpu, entry] : claimed) {
    if (entry->memory > 0) continue;  // a share waiter keeps room, below
    ShareRoom& r = rooms[static_cast<size_t>(gpu)];
    r.shareable = r.whole_free = false;
    r.reason = StrCat("wanted by ", entry->user, ", who queued first");
    r.kept_by.push_back(entry->id);
  }
  for (const QueueEntry& e : queue) {
    if (before && e.id >= *before) break;  // the queue is in arrival (id) order
    if (e.memory == 0) {
      KeepSharedGpusWhole(e, status, claimed, rooms);
    } else {
      KeepRoomForShare(e, rooms);
    }
  }
  return rooms;
}

bool WantedSpecificallyAfter(const std::vector<QueueEntry>& queue, int64_t after, int gpu) {
  return std::any_of(queue.begin(), queue.end(), [&](const QueueEntry& e) {
    return e.id > after && (!e.ids.empty() || e.eligible) && Considers(e, gpu);
  });
}

bool Considers(const QueueEntry& e, int gpu) {
  if (!e.ids.empty()) return std::find(e.ids.begin(), e.ids.end(), gpu) != e.ids.end();
  return !e.eligible || std::binary_search(e.eligible->begin(), e.eligible->end(), gpu);
}

std::map<int, const QueueEntry*> ClaimedAhead(const std::vector<QueueEntry>& queue,
                                              const std::vector<GpuStatus>& status,
                                              std::optional<int64_t> before) {
  std::map<int, const QueueEntry*> claimed;
  for (const QueueEntry& e : queue) {
    if (before && e.id >= *before) break;  // the queue is in arrival (id) order
    int held = 0;
    for (const GpuStatus& s : status) {
      held += s.reservation && s.reservation->queue_id == e.id;
    }
    const int lacking = e.count - held;
    if (lacking <= 0) continue;  // complete: it converts its holds and leaves
    std::vector<const GpuStatus*> usable;
    for (const GpuStatus& s : status) {
      if (Considers(e, s.gpu) && !claimed.count(s.gpu) && FreeFor(e, s)) usable.push_back(&s);
    }
    if (static_cast<int>(usable.size()) > lacking) {
      std::sort(usable.begin(), usable.end(), [&](const GpuStatus* a, const GpuStatus* b) {
        return LeastWantedFirst(*a, WantedSpecificallyAfter(queue, e.id, a->gpu)) <
               LeastWantedFirst(*b, WantedSpecificallyAfter(queue, e.id, b->gpu));
      });
      usable.resize(static_cast<size_t>(lacking));
    }
    for (const GpuStatus* s : usable) claimed[s->gpu] = &e;
  }
  return claimed;
}

}  // namespace canhazgpu::alloc
