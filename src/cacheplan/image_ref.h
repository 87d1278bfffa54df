// Container image references ("nginx", "ghcr.io/org/app:v1",
// "localhost:5000/x@sha256:…") parsed with the grammar of the
// distribution/reference package that docker, containerd and CRI-O use, and
// normalised as they do: no registry means docker.io, index.docker.io is
// docker.io, a one-component Docker Hub repository is under library/. The
// registry host is what registry credentials (.dockerconfigjson) are keyed
// by. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace canhazgpu::cacheplan {

struct ImageRef {
  std::string registry;    // "docker.io", "ghcr.io", "localhost:5000", "[::1]:5000" (lowercase)
  std::string repository;  // "library/nginx", "org/app"
  std::string tag;         // "" when the reference has none
  std::string digest;      // "sha256:<64 hex>", or ""

  bool operator==(const ImageRef&) const = default;

  // "registry/repository"
  std::string Name() const;
  // The fully qualified reference: Name() then ":tag" and/or "@digest";
  // ":latest" when the reference had neither (what a runtime pulls).
  std::string String() const;
};

// InvalidArgument, in one line naming the reference and what is wrong with
// it (uppercase in the repository, a bad tag or digest, too long, empty
// component), for anything the grammar refuses.
absl::StatusOr<ImageRef> ParseImageRef(std::string_view ref);

// [a-z0-9]: the characters a name component starts and ends with (image
// names, and the cache item names validate.cc checks the same way).
bool IsLowerAlnum(char c);

}  // namespace canhazgpu::cacheplan
