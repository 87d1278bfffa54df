#include "driver/host_queue.h"

#include <algorithm>
#include <optional>

#include "alloc/backfill.h"
#include "alloc/shares.h"

namespace canhazgpu::driver {
namespace {

const QueueEntry* EntryOf(const std::vector<QueueEntry>& queue, int64_t id) {
  for (const QueueEntry& e : queue) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

QueueKeep Whole(const QueueEntry& e) { return {.user = e.user, .memory = 0, .since = e.enqueued}; }

}  // namespace

std::map<int, std::vector<QueueKeep>> KeptForHostQueue(
    const std::vector<QueueEntry>& queue, const std::vector<alloc::GpuStatus>& statuses,
    bool sharing) {
  std::map<int, std::vector<QueueKeep>> kept;
  if (queue.empty()) return kept;
  // The free GPUs waiters would take now. A share waiter takes a free GPU
  // for its share; on a node that does not share, that GPU is then held,
  // so it is kept whole; on one that shares, its memory is kept below.
  for (const auto& [gpu, entry] : alloc::ClaimedAhead(queue, statuses, std::nullopt)) {
    if (!sharing || entry->memory == 0) kept[gpu].push_back(Whole(*entry));
  }
  if (!sharing) return kept;
  const std::vector<alloc::ShareRoom> now = alloc::RoomsOf(statuses);
  const std::vector<alloc::ShareRoom> behind =
      alloc::ShareRoomsBehind(queue, statuses, std::nullopt);
  for (size_t i = 0; i < behind.size() && i < now.size(); ++i) {
    const alloc::ShareRoom& room = behind[i];
    if (kept.count(room.gpu) > 0 || room.kept_by.empty()) continue;
    // Shareable now but not behind the queue: a waiter wants it whole.
    const bool whole = now[i].shareable && !room.shareable;
    for (int64_t id : room.kept_by) {
      const QueueEntry* e = EntryOf(queue, id);
      if (e == nullptr) continue;
      QueueKeep keep = Whole(*e);
      if (!whole) keep.memory = e->memory;
      kept[room.gpu].push_back(std::move(keep));
    }
  }
  return kept;
}

uint64_t KeptMemory(const std::map<int, std::vector<QueueKeep>>& kept, int gpu) {
  auto it = kept.find(gpu);
  if (it == kept.end() || KeptWhole(kept, gpu)) return 0;
  uint64_t bytes = 0;
  for (const QueueKeep& k : it->second) bytes += k.memory;
  return bytes;
}

bool KeptWhole(const std::map<int, std::vector<QueueKeep>>& kept, int gpu) {
  auto it = kept.find(gpu);
  return it != kept.end() && std::any_of(it->second.begin(), it->second.end(),
                                         [](const QueueKeep& k) { return k.memory == 0; });
}

}  // namespace canhazgpu::driver
