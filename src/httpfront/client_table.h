// Who holds the front's connections, counted by client identity
// (client_identity.h), and the rule that decides whether one more may be
// opened. One client's connections, however slow, cannot lock another out:
//  - a client holds at most `per_client` connections; past that its new
//    ones are refused while every other client is still admitted;
//  - when all `total` are taken, a newcomer holding at least two fewer than
//    some other client takes one of that client's (the front closes the
//    one it picks), so each client keeps a fair share of a full server.
// Pure bookkeeping, no sockets. Thread-safe: every call takes one mutex.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/mutex.h"

namespace canhazgpu::httpfront {

class ClientTable {
 public:
  ClientTable(int per_client, int total) : per_client_(per_client), total_(total) {}

  enum class Verdict {
    kAdmitted,       // counted
    kOverClientCap,  // `client` already holds per_client
    kFull,           // all taken: ask Donor(), or refuse
  };
  Verdict Acquire(const std::string& client);

  // All taken: of `candidates` (clients with a connection the caller could
  // close), the one holding the most, if it holds at least two more than
  // `client`, so that it keeps no fewer than `client` gets. Empty if none.
  std::string Donor(const std::string& client, const std::vector<std::string>& candidates) const;

  // Moves one connection from `donor` to `client`, if the rule above still
  // holds (the counts may have changed since Donor()). The caller then
  // closes one of the donor's connections without Release().
  bool Transfer(const std::string& donor, const std::string& client);

  void Release(const std::string& client);

  int Holding(const std::string& client) const;

 private:
  int HoldingLocked(const std::string& client) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool MayGive(int donor, int client) const { return donor >= client + 2 && client < per_client_; }

  const int per_client_;
  const int total_;
  mutable Mutex mu_;
  std::unordered_map<std::string, int> counts_
      ABSL_GUARDED_BY(mu_);  // clients holding at least one
  int taken_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace canhazgpu::httpfront
