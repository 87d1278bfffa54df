#include "web/metrics.h"

#include <map>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "core/strings.h"

namespace canhazgpu::web {
namespace {

void Family(std::string& out, const char* name, const char* type, const char* help) {
  out += StrCat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

}  // namespace

std::string EscapeLabel(const std::string& value) {
  std::string out;
  // Shown as everywhere else first: valid UTF-8 (the format requires it) and
  // no control characters, so no newline; then the format's escapes of \ and ".
  for (char c : EscapeForDisplay(value)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string MetricsText(const nlohmann::ordered_json& gpus, const nlohmann::ordered_json& queue,
                        double scrape_seconds) {
  std::string out;
  std::map<std::string, int> by_state = {
      {"AVAILABLE", 0}, {"IN_USE", 0}, {"UNRESERVED", 0}, {"ERROR", 0}};
  std::map<std::tuple<std::string, std::string>, int> reservations;
  for (const auto& g : gpus) {
    by_state[g.value("status", "ERROR")]++;
    if (g.value("status", "") == "IN_USE" && g.contains("type")) {
      reservations[{g.value("user", ""), g.value("type", "")}]++;
    }
  }
  Family(out, "canhazgpu_gpus", "gauge", "GPUs by state.");
  for (const auto& [state, n] : by_state) {
    out += StrCat("canhazgpu_gpus{state=\"", absl::AsciiStrToLower(state), "\"} ", n, "\n");
  }
  Family(out, "canhazgpu_reserved_gpus", "gauge", "GPUs held, by user and reservation type.");
  for (const auto& [key, n] : reservations) {
    const auto& [user, type] = key;
    out += StrCat("canhazgpu_reserved_gpus{user=\"", EscapeLabel(user), "\",type=\"",
                  EscapeLabel(absl::AsciiStrToLower(type)), "\"} ", n, "\n");
  }
  int64_t oldest = 0;
  for (const auto& e : queue.value("entries", nlohmann::ordered_json::array())) {
    oldest = std::max<int64_t>(oldest, e.value("waited_seconds", int64_t{0}));
  }
  Family(out, "canhazgpu_queue_length", "gauge", "Requests waiting for GPUs.");
  out += StrCat("canhazgpu_queue_length ", queue.value("total_waiting", 0), "\n");
  Family(out, "canhazgpu_queue_oldest_wait_seconds", "gauge",
         "How long the head of the queue has waited (0 when empty).");
  out += StrCat("canhazgpu_queue_oldest_wait_seconds ", oldest, "\n");
  Family(out, "canhazgpu_gpu_memory_used_bytes", "gauge", "GPU memory in use.");
  std::string totals;
  for (const auto& g : gpus) {
    if (!g.contains("memory_used_mib")) continue;
    std::string labels = StrCat("{gpu=\"", g.value("gpu_id", -1), "\"}");
    out += StrCat("canhazgpu_gpu_memory_used_bytes", labels, " ",
                  g.value("memory_used_mib", int64_t{0}) * 1048576, "\n");
    totals += StrCat("canhazgpu_gpu_memory_total_bytes", labels, " ",
                     g.value("memory_total_mib", int64_t{0}) * 1048576, "\n");
  }
  Family(out, "canhazgpu_gpu_memory_total_bytes", "gauge", "GPU memory size.");
  out += totals;
  Family(out, "canhazgpu_scrape_duration_seconds", "gauge", "Time to collect this snapshot.");
  out += absl::StrFormat("canhazgpu_scrape_duration_seconds %.6f\n", scrape_seconds);
  return out;
}

}  // namespace canhazgpu::web
