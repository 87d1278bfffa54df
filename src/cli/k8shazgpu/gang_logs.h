// A multi-node run's output: each rank's main container log copied to
// stdout as its lines arrive, every line prefixed "[rank] ", whole lines
// only (two ranks never mix within a line), each rank resumed after a
// dropped stream as `run` resumes its one pod (log_follow.h). One thread
// per rank, started once the rank's container has started. Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// "[1] " before each line of `text`; `partial` keeps a line that has not
// ended yet between calls. Pure.
std::string PrefixLines(int rank, std::string_view text, std::string& partial);

class GangLogs {
 public:
  // `only_rank`: copy that rank's output alone (--logs RANK), unprefixed.
  GangLogs(kube::Client& client, std::string ns, std::optional<int> only_rank);
  ~GangLogs();

  // The ranks as last read: starts copying each one whose container has started.
  void Update(const std::vector<nlohmann::json>& ranks);
  // The run ended: waits until every copy has read its log to the end.
  void Finish();
  // Interrupted: stops every copy now.
  void Stop();

 private:
  void Copy(int rank, std::string pod);
  void Write(std::string_view text);

  kube::Client& client_;
  const std::string ns_;
  const std::optional<int> only_rank_;
  std::atomic<bool> cancel_{false};
  std::map<std::string, int> started_;  // pod uid -> rank; the command's thread only
  std::vector<std::thread> threads_;
  Mutex out_mu_;
};

}  // namespace canhazgpu::cli::k8s
