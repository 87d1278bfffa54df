// The kinds the simulated API server serves: the built-in ones our programs
// and kubectl use, and those added by creating a CustomResourceDefinition.
// Thread-compatible: the server guards it with its store's lock.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nlohmann/json_fwd.hpp"

namespace canhazgpu::kubesim {

struct ResourceType {
  std::string group;     // "" for the core group
  std::string version;   // v1
  std::string resource;  // plural, as in paths: resourceslices
  std::string singular;  // resourceslice
  std::string kind;      // ResourceSlice
  bool namespaced = true;
  bool has_status = false;  // a status subresource with the real split
  bool has_scale = false;   // the scale subresource (autoscaling/v1 Scale)
  std::vector<std::string> short_names;
  // Field selectors besides metadata.name and metadata.namespace.
  std::vector<std::string> selectable_fields;
  // A custom resource's openAPIV3Schema (its CRD's, for this version);
  // built-in kinds are checked against the compiled-in OpenAPI documents.
  std::shared_ptr<const nlohmann::json> schema;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // Identifies the type across versions: "resource.k8s.io/resourceslices".
  std::string key() const { return group + "/" + resource; }
};

class ResourceTypes {
 public:
  // The built-in kinds, from the one table of them (resource_types.cc); each
  // is validated by its group-version's document in openapi/.
  static ResourceTypes BuiltIn();

  void Add(ResourceType type);
  bool Remove(const std::string& group, const std::string& resource);
  const ResourceType* Find(const std::string& group, const std::string& version,
                           const std::string& resource) const;
  const ResourceType* FindKind(const std::string& api_version, const std::string& kind) const;
  const std::vector<ResourceType>& all() const { return types_; }

 private:
  std::vector<ResourceType> types_;
};

}  // namespace canhazgpu::kubesim
