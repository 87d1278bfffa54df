#include "web/metrics.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "metrics/registry.h"

namespace canhazgpu::web {

std::string MetricsText(const nlohmann::ordered_json& gpus, const nlohmann::ordered_json& queue,
                        double scrape_seconds) {
  // A registry per scrape: the snapshot is the whole state, nothing counts
  // across scrapes.
  metrics::MetricsRegistry registry;
  metrics::Metric& by_state = registry.Gauge("canhazgpu_gpus", "GPUs by state.", {"state"});
  for (const char* state : {"available", "in_use", "shared", "unreserved", "error"}) {
    by_state.Set(0, {state});
  }
  metrics::Metric& reserved =
      registry.Gauge("canhazgpu_reserved_gpus", "Whole GPUs held, by user and reservation type.",
                     {"user", "type"});
  metrics::Metric& shares = registry.Gauge(
      "canhazgpu_gpu_shares", "Memory shares of GPUs held, by user and type.", {"user", "type"});
  metrics::Metric& share_memory =
      registry.Gauge("canhazgpu_gpu_share_memory_bytes",
                     "GPU memory booked by shares, by GPU and user.", {"gpu", "user"});
  metrics::Metric& share_left = registry.Gauge("canhazgpu_gpu_share_memory_left_bytes",
                                               "What a shared GPU has left to share.", {"gpu"});
  for (const auto& g : gpus) {
    // A shared GPU is IN_USE with its holders joined in "user": counted
    // apart, per share, so that no label holds several users.
    if (g.value("shared", false)) {
      by_state.Add(1, {"shared"});
      const std::string gpu = std::to_string(g.value("gpu_id", -1));
      share_left.Set(static_cast<double>(g.value("memory_left_bytes", uint64_t{0})), {gpu});
      for (const auto& share : g.value("shares", nlohmann::ordered_json::array())) {
        const std::string user = share.value("user", "");
        shares.Add(1, {user, absl::AsciiStrToLower(share.value("type", ""))});
        share_memory.Add(static_cast<double>(share.value("memory_bytes", uint64_t{0})),
                         {gpu, user});
      }
      continue;
    }
    by_state.Add(1, {absl::AsciiStrToLower(g.value("status", "ERROR"))});
    if (g.value("status", "") == "IN_USE" && g.contains("type")) {
      reserved.Add(1, {g.value("user", ""), absl::AsciiStrToLower(g.value("type", ""))});
    }
  }
  int64_t oldest = 0;
  for (const auto& e : queue.value("entries", nlohmann::ordered_json::array())) {
    oldest = std::max<int64_t>(oldest, e.value("waited_seconds", int64_t{0}));
  }
  registry.Gauge("canhazgpu_queue_length", "Requests waiting for GPUs.")
      .Set(queue.value("total_waiting", 0));
  registry
      .Gauge("canhazgpu_queue_oldest_wait_seconds",
             "How long the head of the queue has waited (0 when empty).")
      .Set(static_cast<double>(oldest));
  metrics::Metric& used =
      registry.Gauge("canhazgpu_gpu_memory_used_bytes", "GPU memory in use.", {"gpu"});
  metrics::Metric& total =
      registry.Gauge("canhazgpu_gpu_memory_total_bytes", "GPU memory size.", {"gpu"});
  for (const auto& g : gpus) {
    if (!g.contains("memory_used_mib")) continue;
    const std::string gpu = std::to_string(g.value("gpu_id", -1));
    used.Set(static_cast<double>(g.value("memory_used_mib", int64_t{0}) * 1048576), {gpu});
    total.Set(static_cast<double>(g.value("memory_total_mib", int64_t{0}) * 1048576), {gpu});
  }
  registry.Gauge("canhazgpu_scrape_duration_seconds", "Time to collect this snapshot.")
      .Set(scrape_seconds);
  return registry.Render();
}

}  // namespace canhazgpu::web
