// The vocabulary of the state store: the pool, reservations and the release
// history. Plain values; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"

namespace canhazgpu {

enum class ReservationKind { kRun, kManual };

// "run" / "manual", the spelling stored in the state file.
std::string_view KindName(ReservationKind kind);
// "RUN" / "MANUAL", canhazgpu's display spelling.
std::string_view KindLabel(ReservationKind kind);
std::optional<ReservationKind> ParseKind(std::string_view name);

// Identifies one process for its whole life: a pid alone can be reused, but
// (pid, start time in clock ticks since boot) cannot.
struct ProcessRef {
  int64_t pid = 0;
  uint64_t start_ticks = 0;
  bool operator==(const ProcessRef&) const = default;
};

// The GPU pool as `admin` configured it.
struct PoolConfig {
  int gpu_count = 0;
  std::string provider;   // "nvidia", "amd" or "fake"
  std::string fake_host;  // simulated-host JSON file, for provider "fake"
};

// One GPU held by one user. Keyed by GPU, so two holders of one GPU cannot be
// represented at all.
struct Reservation {
  int gpu = 0;
  uint32_t uid = 0;
  std::string user;
  ReservationKind kind = ReservationKind::kManual;
  TimePoint start;
  std::optional<TimePoint> expires;   // manual reservations
  std::optional<ProcessRef> process;  // run reservations: the job's process
  std::string note;
  std::string command;  // run reservations: the command line, for status
};

// Why a reservation ended, as kept in the history.
enum class ReleaseReason { kReleased, kExpired, kJobExited, kAdminReset };
std::string_view ReasonName(ReleaseReason reason);
std::optional<ReleaseReason> ParseReason(std::string_view name);

struct HistoryRecord {
  int gpu = 0;
  uint32_t uid = 0;
  std::string user;
  ReservationKind kind = ReservationKind::kManual;
  TimePoint start;
  TimePoint end;
  ReleaseReason reason = ReleaseReason::kReleased;
  std::string note;
};

HistoryRecord EndReservation(const Reservation& r, TimePoint end, ReleaseReason reason);

}  // namespace canhazgpu
