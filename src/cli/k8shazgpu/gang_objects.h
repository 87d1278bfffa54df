// The objects of a multi-node run (`run --nodes N --gpus-per-node G`,
// ADR 0019), as plain batch/v1 and core/v1 JSON: an Indexed Job of N ranks,
// one pod per node, each with its own claim of G devices from the run's
// ResourceClaimTemplate (run_objects.h), and a headless Service that gives
// rank i the name "<run>-<i>.<run>". The ranks' environment carries torchrun's,
// SkyPilot's and dstack's names (docs/multi-node.md has the table). Every
// object validates against Kubernetes 1.34's OpenAPI (gang_objects_test.cc).
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "cli/k8shazgpu/run_objects.h"
#include "cli/k8shazgpu/run_request.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// The scheduling gate our own gang admission holds every rank with, until
// all N fit at once (ADR 0019).
inline constexpr char kGangGate[] = "canhazgpu.dev/gang";
// torchrun's default rendezvous port.
inline constexpr int kDefaultMasterPort = 29500;

struct GangShape {
  int nodes = 1;  // N ranks, each on its own node
  int master_port = kDefaultMasterPort;
  // Our own gang admission: each rank starts behind kGangGate.
  bool gated = true;
  // Kueue admits the Job: it is created suspended, with this queue's label.
  std::string kueue_queue;
  // The cluster's gang scheduler admits the ranks: each names this
  // PodGroup in spec.schedulingGroup (GangPodGroupObject).
  std::string pod_group;
};

// Rank i's stable name: "<run>-<i>.<run>" (the Job's pod hostname in the
// headless Service's subdomain).
std::string RankHost(const RunNames& names, int rank);

// The headless Service behind the rank names (no cluster IP; the ranks'
// addresses before they are ready, since rank 0 listens before it is).
nlohmann::json GangServiceObject(const RunNames& names);

// The Indexed Job: completions = parallelism = N, backoffLimit 0 (one
// failed rank fails the run and the Job deletes the others), `pod` (what a
// one-pod run of `request` would create: PodObject(), or with the working
// directory shipped) as each rank, with anti-affinity on the node's
// hostname against the run's other ranks, the rank environment, and an
// entry script that counts the devices the claim really holds
// (NPROC_PER_NODE, WORLD_SIZE) before it execs the command; --timeout is
// the Job's activeDeadlineSeconds, --ttl its ttlSecondsAfterFinished.
nlohmann::json GangJobObject(const RunRequest& request, const RunNames& names,
                             const GangShape& shape, const nlohmann::json& pod);

// An ownerReference to `job` as created: the Service and the claim template
// go with it.
nlohmann::json OwnerReferenceToJob(const nlohmann::json& job);

// The PodGroup through which the cluster's own gang scheduling (KEP-4671,
// `ref`: scheduling.k8s.io v1beta1 or v1alpha2) places the run's N ranks
// all at once or not at all: policy gang, minCount N, owned by `job`.
nlohmann::json GangPodGroupObject(const RunNames& names, const kube::ResourceRef& ref, int nodes,
                                  const nlohmann::json& job);

}  // namespace canhazgpu::cli::k8s
