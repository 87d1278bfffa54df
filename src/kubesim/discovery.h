// Discovery for the simulated API server: /version, /api, /apis, the
// resource lists of each group-version (verbs, scope, short names,
// subresources), /openapi/v3 and the health endpoints — what kubectl reads
// before it sends anything else.
#pragma once

#include <string>
#include <vector>

#include "httplib.h"
#include "kubesim/object_store.h"

namespace canhazgpu::kubesim {

// Answers `req` when it is a discovery request (true); false otherwise.
bool ServeDiscovery(const ObjectStore& store, const std::vector<std::string>& parts,
                    const httplib::Request& req, httplib::Response& res);

}  // namespace canhazgpu::kubesim
