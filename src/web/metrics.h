// Prometheus text exposition (version 0.0.4) of one status snapshot: GPUs by
// state, whole-GPU reservations by user and type, memory shares by user and
// GPU, the queue, GPU memory, and how long the scrape took. Pure: built from the same JSON the API
// serves, through the registry the node daemon uses (metrics/registry.h).
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace canhazgpu::web {

std::string MetricsText(const nlohmann::ordered_json& gpus, const nlohmann::ordered_json& queue,
                        double scrape_seconds);

}  // namespace canhazgpu::web
