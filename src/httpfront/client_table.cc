#include "httpfront/client_table.h"

namespace canhazgpu::httpfront {

ClientTable::Verdict ClientTable::Acquire(const std::string& client) {
  MutexLock lock(mu_);
  const int held = HoldingLocked(client);
  if (held >= per_client_) return Verdict::kOverClientCap;
  if (taken_ >= total_) return Verdict::kFull;
  counts_[client] = held + 1;
  ++taken_;
  return Verdict::kAdmitted;
}

std::string ClientTable::Donor(const std::string& client,
                               const std::vector<std::string>& candidates) const {
  MutexLock lock(mu_);
  const int held = HoldingLocked(client);
  std::string donor;
  int most = 0;
  for (const std::string& c : candidates) {
    const int n = HoldingLocked(c);
    if (c != client && n > most && MayGive(n, held)) {
      donor = c;
      most = n;
    }
  }
  return donor;
}

bool ClientTable::Transfer(const std::string& donor, const std::string& client) {
  MutexLock lock(mu_);
  auto from = counts_.find(donor);
  const int held = HoldingLocked(client);
  if (donor == client || from == counts_.end() || !MayGive(from->second, held)) return false;
  // from->second >= 2, so the donor stays in the map.
  --from->second;
  counts_[client] = held + 1;
  return true;
}

void ClientTable::Release(const std::string& client) {
  MutexLock lock(mu_);
  auto it = counts_.find(client);
  if (it == counts_.end()) return;
  // Forgotten at zero, so that a flood of one-off clients leaves nothing.
  if (--it->second == 0) counts_.erase(it);
  --taken_;
}

int ClientTable::Holding(const std::string& client) const {
  MutexLock lock(mu_);
  return HoldingLocked(client);
}

int ClientTable::HoldingLocked(const std::string& client) const {
  auto it = counts_.find(client);
  return it == counts_.end() ? 0 : it->second;
}

}  // namespace canhazgpu::httpfront
