// Server-side printing: kubectl get asks for a meta.k8s.io/v1 Table
// (Accept: application/json;as=Table;v=v1;g=meta.k8s.io) and prints its
// columns; without one it can show only names and ages. The columns follow
// the real server's: pods NAME READY STATUS RESTARTS AGE (IP and NODE with
// -o wide), a custom resource its CRD's additionalPrinterColumns, every
// other kind NAME and AGE. Rows carry the object's metadata
// (PartialObjectMetadata), or the whole object with includeObject=Object.
// Pure functions.
#pragma once

#include <string>

#include "core/clock.h"
#include "kubesim/resource_types.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

// Whether the request's Accept header asks for a Table first.
bool WantsTable(const std::string& accept);

// `objects` is one object or a List; `crd` the CustomResourceDefinition of
// a custom kind (null otherwise); `include_object` is the includeObject
// parameter ("" means Metadata).
// Watch events after the first carry no columnDefinitions
// (`with_columns` false), as the real server sends them.
nlohmann::json ToTable(const ResourceType& type, const nlohmann::json& objects,
                       const nlohmann::json& crd, const std::string& include_object, TimePoint now,
                       bool with_columns = true);

// kubectl's human age: "45s", "3m20s", "5h", "12d", "2y30d".
std::string HumanAge(std::chrono::seconds age);

}  // namespace canhazgpu::kubesim
