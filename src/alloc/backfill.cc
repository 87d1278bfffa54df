#include "alloc/backfill.h"

#include <algorithm>
#include <tuple>

#include "alloc/reservations_internal.h"

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

}  // namespace

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
