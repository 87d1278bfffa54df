// The queue of `k8shazgpu queue`: pending pods that use DRA claims - runs of
// k8shazgpu (label canhazgpu.dev/run) and any other - in creation order,
// each with what it asks for and why it waits (ExplainPod's summary).
// Kubernetes has no queue order for them (the scheduler retries each on its
// own backoff), so the position is only the order in which they came.
// Pure functions of a View; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "clusterview/view.h"
#include "core/clock.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::clusterview {

inline constexpr char kRunLabel[] = "canhazgpu.dev/run";

struct QueueEntry {
  int position = 0;  // 1-based
  std::string ns;
  std::string name;
  std::string user;  // canhazgpu.dev/user, "" when none
  std::string run;   // canhazgpu.dev/run, "" for a pod not made by k8shazgpu
  std::string note;  // the run's --note, "" when none
  // Per request: "gpu: 2 x gpu.canhazgpu.dev where memory" (DescribeRequest).
  std::vector<std::string> asks;
  Duration age{0};
  bool never = false;
  std::string why;  // the explanation's summary ("can never run: ..." when never)
  // A multi-node run (gang_view.h) is one entry: `name` is its Job, this
  // many of its ranks wait; 0 for a single pod.
  int ranks = 0;
};

std::vector<QueueEntry> PendingQueue(const View& view, TimePoint now);

// Rows for a table: the header first ("#", "POD", "USER", "NOTE", "ASKS",
// "AGE", "WHY"), then a row per entry (asks joined with "; ", POD
// "ns/name", "ns/job (N ranks)" for a multi-node run, "-" for no user or
// note).
std::vector<std::vector<std::string>> QueueRows(const std::vector<QueueEntry>& queue);

// [{"position", "namespace", "name", "user", "run", "note", "asks",
//   "ageSeconds", "never", "why", "ranks"}].
nlohmann::ordered_json QueueJson(const std::vector<QueueEntry>& queue);

}  // namespace canhazgpu::clusterview
