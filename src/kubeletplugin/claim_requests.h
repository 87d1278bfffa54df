// The rules of the DRA protocol that hold for every version and that the
// driver should not have to repeat: every claim in a request gets an entry
// in the response (keyed by uid), a claim without uid, namespace or name
// gets a per-claim error naming the missing field instead of reaching the
// driver, and a uid that appears twice in one request is handled once.
// Stateless; thread-safe as far as the NodeService is.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "driver/node_service.h"

namespace canhazgpu::kubeletplugin {

std::map<std::string, driver::PrepareResult> PrepareClaims(
    driver::NodeService& node, const std::vector<driver::ClaimRef>& claims,
    const driver::CallBounds& bounds);

std::map<std::string, std::string> UnprepareClaims(driver::NodeService& node,
                                                   const std::vector<driver::ClaimRef>& claims,
                                                   const driver::CallBounds& bounds);

}  // namespace canhazgpu::kubeletplugin
