// The one rule of sharing a GPU by memory (ADR 0018), checked by every
// StateStore inside the transaction that inserts a reservation: a GPU is
// held either whole by one reservation or by shares whose memory sums to at
// most its shareable memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/reservation.h"

namespace canhazgpu::store {

// What the store holds of one GPU, as the check needs it.
struct HeldPart {
  std::string share;       // "" for the whole GPU
  uint64_t memory = 0;     // 0 for the whole GPU
  uint64_t shareable = 0;  // as recorded with the share
};

// OK when `r` may be added to `held` (the GPU's current reservations);
// otherwise the error InsertReservation returns (state_store.h).
absl::Status CheckMayHold(const std::vector<HeldPart>& held, const Reservation& r);

// "10Gi", "512Mi", "1.5Gi": bytes for people, in binary units.
std::string FormatBytes(uint64_t bytes);

}  // namespace canhazgpu::store
