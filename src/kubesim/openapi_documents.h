// The Kubernetes 1.34 OpenAPI v3 documents the simulated API server serves
// and validates against, compiled in from src/kubesim/openapi/.
#pragma once

#include <string_view>
#include <vector>

namespace canhazgpu::kubesim {

struct OpenApiDocument {
  std::string_view group_version_path;  // "api/v1", "apis/resource.k8s.io/v1"
  std::string_view json;
};

const std::vector<OpenApiDocument>& OpenApiDocuments();

}  // namespace canhazgpu::kubesim
