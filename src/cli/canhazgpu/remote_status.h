// Other hosts' status over ssh, as `status --remote/--all` and the
// dashboard's hosts overview ask for it: `ssh ... -- HOST canhazgpu status
// --json [--summary]` on every host at once, each answer parsed or turned
// into a one-line reason. Also the one-line-per-host summary of a status.
// Thread-compatible: RemoteReports blocks until every host answered or timed
// out, and shares nothing between calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/common/flags.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli {

// The name this host has among the hosts of `status --all`.
inline constexpr char kLocalHost[] = "localhost";

// What one host said: its `status --json` (or --summary --json) value, or
// why it could not be had.
struct HostReport {
  std::string host;
  nlohmann::ordered_json value;
  std::string error;
  // The GPU provider failed as a whole: the table says so once, above it,
  // while each JSON row keeps its own `error` (as before).
  std::string provider_error;
};

// A host name reaches ssh as its own argument after `--`; still, refuse
// what cannot be a destination rather than pass it on.
absl::Status CheckHostName(const std::string& host);

// A count or a size in a status or summary, which may come from another
// host and hold anything: 0 unless a whole number that is not negative.
uint64_t CountField(const nlohmann::ordered_json& v, const char* key);

// One host's line of `status --summary --json`, from its `status --json`
// array and the number of queue entries waiting.
nlohmann::ordered_json SummaryJson(const nlohmann::ordered_json& gpus, size_t waiting);

// Asks every host at once with the flags' `ssh` program, giving each
// `remote-timeout`; `summary` asks for the one-line summary. The reports
// are in the order of `hosts`; the hosts must have passed CheckHostName.
std::vector<HostReport> RemoteReports(const std::vector<std::string>& hosts,
                                      const ParsedFlags& flags, bool summary);

}  // namespace canhazgpu::cli
