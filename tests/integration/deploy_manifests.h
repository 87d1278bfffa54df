// Reading and checking the manifests under deploy/ for deploy_test: the
// files a kustomization lists, split into objects; each object checked
// strictly against the simulated API server's compiled-in Kubernetes 1.34
// OpenAPI schemas; a CRD's schema checked for being structural; a custom
// resource checked against its CRD's schema (the simulated server stores
// custom resources without looking at them). Pure functions over JSON.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::testing {

// Every object of the files that `kustomization_dir`/kustomization.yaml
// lists under `resources:`, in order.
absl::StatusOr<std::vector<nlohmann::json>> LoadKustomizationResources(
    const std::string& kustomization_dir);

// "Kind name" for messages.
std::string Describe(const nlohmann::json& object);

// Why `object` would not be accepted with fieldValidation=Strict, one line
// each: an unknown kind, a kind without a schema, a decode error, rule
// violations, unknown fields. Empty when it validates.
std::vector<std::string> StrictValidationErrors(const nlohmann::json& object);

// Whether `object`'s kind is namespaced; false for unknown kinds.
bool IsNamespaced(const nlohmann::json& object);

// Where `schema` (a CRD's openAPIV3Schema) is not structural, as the API
// server defines it: every node has a type (or says int-or-string or
// preserve-unknown-fields), arrays have items, properties and
// additionalProperties do not mix, metadata says no more than its type.
std::vector<std::string> StructuralErrors(const nlohmann::json& schema);

// The schema node at a printer column's `jsonPath` (".status.summary.free"),
// or null.
nlohmann::json SchemaAt(const nlohmann::json& schema, const std::string& json_path);

// Why `value` does not match `schema` (type, enum, required, unknown
// fields, minimum, maxItems, date-time): one line each, empty when it does.
std::vector<std::string> SchemaErrors(const nlohmann::json& schema, const nlohmann::json& value);

}  // namespace canhazgpu::testing
