// What a --gpu-mem run got, one line per device of its claims: the share
// of the GPU's memory the allocation holds and how the node keeps the run
// to it (the device's published memoryIsolation, docs/sharing.md), or that
// the node does not share that GPU by memory, so the run holds it whole.
// Said, never implied (ADR 0018).
#pragma once

#include <string>
#include <vector>

#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// Pure: the lines for `claims` (allocated ResourceClaims) with the devices
// described by `slices` (ResourceSlices).
std::vector<std::string> ShareLines(const std::vector<nlohmann::json>& claims,
                                    const std::vector<nlohmann::json>& slices);

// The lines for the claims of `pod`, read from the API server; a claim or
// the slices that cannot be read leave their lines out.
std::vector<std::string> FetchShareLines(kube::Client& client, const std::string& ns,
                                         const nlohmann::json& pod);

}  // namespace canhazgpu::cli::k8s
