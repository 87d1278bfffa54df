// The kubeconfig the simulator writes for itself: one cluster, user and
// context named "sim", namespace default; certificates inline when it serves
// TLS, the token when it asks for one. Pure function.
#pragma once

#include <string>

#include "kubesim/certificates.h"

namespace canhazgpu::sim {

// `certs` may be null (plain HTTP); `token` may be empty.
std::string SimKubeconfig(const std::string& server, const std::string& token,
                          const kubesim::Certificates* certs);

}  // namespace canhazgpu::sim
