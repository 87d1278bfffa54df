// Where a run's pod is, and how it ended, read from the pod as the API
// returns it: the stage `run` waits through (pending in line, scheduled
// and being prepared, running, finished) and the exit code `run` returns -
// the container's (128+N for signal N), or, when it never ran, 1 with the
// pod's failure reason (the driver's prepare error verbatim when there was
// one, DeadlineExceeded, ...). Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

enum class PodStage {
  kPending,    // not on a node yet: in line for GPUs
  kScheduled,  // on a node, its claims being prepared, container not started
  kRunning,    // the container started (its logs can be read)
  kFinished,   // the container ended, or the pod failed without it
};

PodStage StageOf(const nlohmann::json& pod);

struct PodOutcome {
  int exit_code = 0;
  // Empty when the container ran to its end; otherwise one line saying
  // why it never ran or what ended it (a deadline).
  std::string message;
};

// For a pod at kFinished. `prepare_error` is the last
// FailedPrepareDynamicResources event's message, "" if none.
PodOutcome OutcomeOf(const nlohmann::json& pod, const std::string& prepare_error);

// The main container's status, or null.
nlohmann::json MainContainerStatus(const nlohmann::json& pod);

}  // namespace canhazgpu::cli::k8s
