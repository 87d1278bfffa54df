// What `k8shazgpu cleanup` deletes, decided from the listed objects that
// carry the run label: the chosen runs' pods and templates, and what runs
// left half-created (a template or claim whose pod never came, found only
// by its labels). Another user's runs are refused by name and skipped by
// --all unless --all-users; a shared claim is deleted only once no pod
// outside the deleted ones owns it. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

struct CleanupScope {
  std::optional<std::string> name;  // --name: one run (its pod's name); else --all
  bool all_users = false;
  std::string me;  // the caller's canhazgpu.dev/user label value
  // --all takes a reservation that is still holding its GPUs only with
  // this (--include-reservations, or the user's yes when asked); --name
  // always may.
  bool include_reservations = false;
};

struct CleanupTarget {
  kube::ResourceRef ref;
  // "pod", "job", "service", "resourceclaimtemplate", "resourceclaim",
  // "configmap": for the output
  std::string kind;
  std::string name;
};

struct CleanupPlan {
  // In deletion order: templates and ConfigMaps (no pod needs them once
  // it runs), then pods, then claims no remaining pod owns.
  std::vector<CleanupTarget> targets;
  std::vector<std::string> others_skipped;        // other users' pods --all left
  std::vector<std::string> reservations_skipped;  // running reservations --all left
};

// `pods`, `templates`, `claims`, `config_maps` (vllm run's change sets),
// `jobs` and `services` (multi-node runs: a Job is deleted as the run, its
// ranks with it): the namespace's objects with the run label. NotFound when
// --name matches nothing; PermissionDenied when it names another user's run
// without all_users.
absl::StatusOr<CleanupPlan> PlanCleanup(const std::vector<nlohmann::json>& pods,
                                        const std::vector<nlohmann::json>& templates,
                                        const std::vector<nlohmann::json>& claims,
                                        const CleanupScope& scope,
                                        const std::vector<nlohmann::json>& config_maps = {},
                                        const std::vector<nlohmann::json>& jobs = {},
                                        const std::vector<nlohmann::json>& services = {});

}  // namespace canhazgpu::cli::k8s
