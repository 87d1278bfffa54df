// HealthSource: the health of the driver's devices on this node, for the
// kubelet's DRAResourceHealth stream. Each change gives a new version, and
// the stream sends the complete list for each version, as the protocol asks.
//
// Threading: implementations are thread-safe; several streams (one per
// connected kubelet, usually one) wait on one source at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace canhazgpu::driver {

struct DeviceHealth {
  enum class State { kUnknown, kHealthy, kUnhealthy };

  std::string pool;
  std::string device;
  State state = State::kUnknown;
  int64_t last_updated_unix = 0;  // seconds
  // Without an update for this long the kubelet shows the device as Unknown;
  // zero means the kubelet's default (30 s).
  int64_t timeout_seconds = 0;
  std::string message;  // shown in Pod status; the kubelet keeps 1024 characters

  bool operator==(const DeviceHealth&) const = default;
};

struct HealthSnapshot {
  uint64_t version = 0;  // grows with every change
  std::vector<DeviceHealth> devices;
};

class HealthSource {
 public:
  virtual ~HealthSource() = default;

  // The health of every device now.
  virtual HealthSnapshot Current() = 0;

  // Blocks until the version differs from `seen_version` or `timeout`
  // passes, and returns the snapshot then (on a timeout, with the version
  // unchanged). Waiting in bounded steps lets a caller also notice that its
  // stream was cancelled or the server is stopping.
  virtual HealthSnapshot WaitForChange(uint64_t seen_version,
                                       std::chrono::milliseconds timeout) = 0;
};

}  // namespace canhazgpu::driver
