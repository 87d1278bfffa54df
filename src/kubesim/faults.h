// Fault injection for the simulated API server: tests make the next N
// requests of a verb and resource fail with a status code (429 with a
// Retry-After, 503, 500...), stall before they are answered, or both — the
// failures a real control plane produces under load, restarts and etcd
// trouble, which client retries and informers must survive. Rules are set
// in process (ApiServer::faults()) or over HTTP at
// /debug/k8shazgpu-sim/faults (docs/kubernetes.md). Thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

struct Fault {
  std::string verb = "*";      // get, list, watch, create, update, patch, delete, ... or *
  std::string resource = "*";  // "pods", "pods/log", "resourceslices/status", ... or *
  int count = 1;               // how many matching requests it hits
  int code = 0;                // answer with this status; 0: answer normally (after the stall)
  int retry_after_seconds = 0;
  std::chrono::milliseconds stall{0};  // hold the request this long first

  // {"verb":"list","resource":"pods","count":2,"code":429,"retryAfterSeconds":1,
  //  "stallMillis":0}; every key optional. Errors name the key.
  static absl::StatusOr<Fault> FromJson(const nlohmann::json& j);
  nlohmann::json ToJson() const;
};

// Bounds on what a rule may ask, so a typo cannot hang a test run.
inline constexpr int kMaxFaultCount = 1'000'000;
inline constexpr std::chrono::milliseconds kMaxFaultStall{600'000};

class FaultInjector {
 public:
  void Add(Fault fault);
  void Clear();
  // The first rule that matches, with one use taken from it (a rule whose
  // uses are spent is dropped); nullopt when none does.
  std::optional<Fault> Take(const std::string& verb, const std::string& resource);
  std::vector<Fault> Pending() const;

 private:
  mutable Mutex mu_;
  std::vector<Fault> faults_ ABSL_GUARDED_BY(mu_);
};

}  // namespace canhazgpu::kubesim
