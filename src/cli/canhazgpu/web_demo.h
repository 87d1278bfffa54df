// `web --demo`: a simulated host for the dashboard, so it can be shown
// without GPUs or a state file. Everything lives in a temporary directory
// removed when the DemoHost goes: a state file (the real SQLite store) with
// 8 simulated H100s, reservations of every kind, two requests waiting, a
// month of history with usage samples, and simulated processes (their
// owners, command lines and models) in a process table of its own. The
// remote hosts' overview is simulated too. Thread-compatible; the store is
// used one call at a time, as the dashboard does.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "alloc/reservations.h"
#include "core/clock.h"
#include "host/process_table.h"
#include "nlohmann/json.hpp"
#include "store/state_store.h"

namespace canhazgpu::cli {

class DemoHost {
 public:
  // The simulated state as of `clock`'s now, in a new directory under
  // $TMPDIR (or /tmp); `open_store` opens (creating) the state file there.
  using OpenStore = std::function<absl::StatusOr<std::unique_ptr<store::StateStore>>(
      const std::string& path, bool create)>;
  static absl::StatusOr<std::unique_ptr<DemoHost>> Create(const Clock& clock,
                                                          const OpenStore& open_store);
  ~DemoHost();  // removes the directory and everything in it
  DemoHost(const DemoHost&) = delete;
  DemoHost& operator=(const DemoHost&) = delete;

  const std::string& dir() const { return dir_; }
  std::shared_ptr<store::StateStore> store() const { return store_; }
  // The real clock with the simulated processes.
  const alloc::Machine& machine() const { return *machine_; }
  // Simulated lines of the hosts overview: one host up, one unreachable.
  static nlohmann::ordered_json RemoteHosts();

 private:
  DemoHost() = default;

  std::string dir_;
  std::unique_ptr<host::ProcessTable> processes_;
  std::unique_ptr<alloc::Machine> machine_;
  std::shared_ptr<store::StateStore> store_;
};

}  // namespace canhazgpu::cli
