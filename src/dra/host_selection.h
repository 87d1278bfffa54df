// Which of this host's GPUs a `reserve` / `run` request may have when it
// asks by what the GPU is (--where, --min-memory, --product, --mig) rather
// than by id. The flags compile into DRA selectors over the same devices
// `canhazgpu devices` prints, so a selector that works on the host works in
// a ResourceClaim and vice versa.
//
// The store reserves physical GPUs. A --mig request therefore reserves the
// parent GPU of a matching MIG instance and shows the job only that
// instance (CUDA_VISIBLE_DEVICES=MIG-<uuid>); sharing one GPU's instances
// between users is not done on a single host.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/gpu.h"
#include "dra/devices.h"

namespace canhazgpu::dra {

struct DeviceWants {
  std::vector<std::string> where;          // CEL selectors, all must hold
  std::optional<std::string> min_memory;   // a quantity: "40Gi", "80G"
  std::optional<std::string> product;      // substring of productName, any case
  std::optional<std::string> mig_profile;  // "1g.10gb": a MIG instance of it

  bool empty() const { return where.empty() && !min_memory && !product && !mig_profile; }
  // The flags as a user would type them, for the queue and messages:
  // "--min-memory 40Gi --product a100".
  std::string Describe() const;
  // The CEL selectors the wants compile to, the device type first, over
  // the attributes of `driver`: ours and NVIDIA's (gpu.nvidia.com) name
  // them alike (type, productName, profile, the memory capacity).
  // InvalidArgument for a bad quantity, an empty value or a --where that
  // does not compile.
  absl::StatusOr<std::vector<std::string>> Selectors(std::string_view driver = kDriverName) const;
};

struct HostSelection {
  std::vector<int> eligible;  // GPU indices with a matching device, ascending
  // For --mig: GPU index -> the MIG instance the job is shown ("MIG-...").
  std::map<int, std::string> mig_uuid;
};

// Evaluates `wants` on every device of the host. Errors, all InvalidArgument
// (the request can never be served here, so it is refused, not queued): a
// selector that does not compile or fails on a device (with Kubernetes' hint
// for a missing attribute), and fewer than `count` GPUs matching - then the
// message is one summary line followed by the allocator's explanation of
// what each selector rejected.
absl::StatusOr<HostSelection> SelectHostGpus(const std::vector<GpuInfo>& gpus,
                                             const std::string& node, const DeviceWants& wants,
                                             int count);

}  // namespace canhazgpu::dra
