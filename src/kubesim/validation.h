// What the simulated API server checks on every create and update, as the
// real one does: the object against its kind's OpenAPI schema (Kubernetes
// 1.34, openapi_documents.h) — types, required fields, enums, unknown fields
// — and, for resource.k8s.io/v1, the documented limits and rules
// (reference/dra.md §2.6: 128 devices per slice, DNS names, one node
// selection, 32 requests per claim, 10 KiB CEL expressions, immutable claim
// specs...). Pure; thread-safe (the parsed schemas are built once).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kube/api_status.h"
#include "kubesim/resource_types.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

struct Validation {
  // The kind has no schema to check against: refused, never stored
  // unchecked (a built-in kind missing from openapi_documents.h).
  std::optional<std::string> no_schema;
  // A value of the wrong JSON type: the real server fails to decode the
  // body and answers 400 BadRequest with this message.
  std::optional<std::string> decode_error;
  // Rule violations: 422 Invalid with these causes.
  std::vector<kube::StatusCause> causes;
  // Fields the schema does not know (spec.foo), already removed from the
  // object, as the server's decoding drops them; fieldValidation=Strict
  // turns them into a 400.
  std::vector<std::string> unknown_fields;
};

// Validates and prunes `object`. `old` is the stored object on an update.
// A custom resource is checked against its CRD's openAPIV3Schema, as the
// real server does: a value of the wrong type is a 422 there
// (FieldValueTypeInvalid, "spec.x in body must be of type integer"), not a
// decode error; apiVersion, kind and metadata are the server's.
Validation Validate(const ResourceType& type, nlohmann::json& object,
                    const nlohmann::json* old = nullptr);

// The OpenAPI v3 document of `group_version_path` ("apis/resource.k8s.io/v1"),
// or nullptr.
const nlohmann::json* OpenApiDocumentFor(const std::string& group_version_path);

}  // namespace canhazgpu::kubesim
