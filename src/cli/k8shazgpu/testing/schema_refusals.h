// For the tests of what k8shazgpu sends: why the API server would refuse
// an object, checked against the simulated server's Kubernetes 1.34
// schemas and rules (the shared schemas, byte for byte), as the server
// checks every write with fieldValidation=Strict. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "kubesim/resource_types.h"
#include "kubesim/validation.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// One line per refusal; empty when the server would take `object`.
inline std::vector<std::string> Refusals(const nlohmann::json& object) {
  static const kubesim::ResourceTypes kTypes = kubesim::ResourceTypes::BuiltIn();
  const kubesim::ResourceType* type =
      kTypes.FindKind(object.value("apiVersion", ""), object.value("kind", ""));
  if (type == nullptr) return {"unknown kind"};
  nlohmann::json copy = object;
  kubesim::Validation v = kubesim::Validate(*type, copy);
  std::vector<std::string> out;
  if (v.decode_error) out.push_back(*v.decode_error);
  for (const kube::StatusCause& c : v.causes) out.push_back(c.field + ": " + c.message);
  for (const std::string& f : v.unknown_fields) out.push_back("unknown field " + f);
  return out;
}

}  // namespace canhazgpu::cli::k8s
