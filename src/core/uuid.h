// A random (version 4) UUID in its canonical text form, as Kubernetes'
// object uids and shareIDs are: "7c1f2a8e-0d6b-4c4e-9a51-3f2b8d1e6a90".
// Thread-safe.
#pragma once

#include <string>

namespace canhazgpu {

std::string RandomUuid();

}  // namespace canhazgpu
