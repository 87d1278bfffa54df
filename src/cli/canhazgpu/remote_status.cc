#include "cli/canhazgpu/remote_status.h"

#include <algorithm>
#include <map>

#include "core/duration.h"
#include "core/strings.h"
#include "host/parallel_commands.h"

namespace canhazgpu::cli {

using Json = nlohmann::ordered_json;

absl::Status CheckHostName(const std::string& host) {
  if (host.empty() || host[0] == '-') {
    return absl::InvalidArgumentError(StrCat("invalid remote host '", host, "'"));
  }
  for (unsigned char c : host) {
    if (c <= ' ' || c == 0x7f) {
      return absl::InvalidArgumentError(StrCat("invalid remote host '", host, "'"));
    }
  }
  return absl::OkStatus();
}

uint64_t CountField(const Json& v, const char* key) {
  auto it = v.find(key);
  if (it == v.end() || !it->is_number_integer()) return 0;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  return static_cast<uint64_t>(std::max<int64_t>(0, it->get<int64_t>()));
}

Json SummaryJson(const Json& gpus, size_t waiting) {
  std::map<std::string, int> states, products;
  uint64_t shared_left = 0, shared_left_most = 0;
  for (const Json& g : gpus) {
    // A shared GPU is IN_USE in `status --json` (for scripts: a whole-GPU
    // request waits for it); here it is counted once, as shared.
    auto flag = g.find("shared");
    const bool shared = flag != g.end() && flag->is_boolean() && flag->get<bool>();
    states[shared ? "SHARED" : g.value("status", "")]++;
    if (shared) {
      const uint64_t left = CountField(g, "memory_left_bytes");
      shared_left += left;
      shared_left_most = std::max(shared_left_most, left);
    }
    if (g.contains("product")) products[g["product"].get<std::string>()]++;
  }
  Json out = {{"gpus", gpus.size()},        {"available", states["AVAILABLE"]},
              {"in_use", states["IN_USE"]}, {"unreserved", states["UNRESERVED"]},
              {"error", states["ERROR"]},   {"waiting", waiting}};
  std::vector<std::string> names;
  for (const auto& [name, n] : products) names.push_back(StrCat(n, "× ", name));
  out["products"] = Join(names, ", ");
  out["shared"] = states["SHARED"];
  out["shared_memory_left_bytes"] = shared_left;
  out["shared_memory_left_most_bytes"] = shared_left_most;
  return out;
}

std::vector<HostReport> RemoteReports(const std::vector<std::string>& hosts,
                                      const ParsedFlags& flags, bool summary) {
  std::vector<std::vector<std::string>> commands;
  Duration timeout = *ParseDuration(*flags.Value("remote-timeout"));
  const int64_t connect_seconds = std::max<int64_t>(1, timeout.count() / 1000);
  for (const std::string& host : hosts) {
    std::vector<std::string> argv = {*flags.Value("ssh"),
                                     "-o",
                                     "BatchMode=yes",
                                     "-o",
                                     StrCat("ConnectTimeout=", connect_seconds),
                                     "--",
                                     host,
                                     "canhazgpu",
                                     "status",
                                     "--json"};
    if (summary) argv.push_back("--summary");
    commands.push_back(std::move(argv));
  }
  std::vector<host::CommandOutput> outputs = host::RunInParallel(commands, timeout);
  std::vector<HostReport> reports;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const host::CommandOutput& o = outputs[i];
    HostReport report{.host = hosts[i]};
    std::string err(Trim(o.err));
    if (size_t nl = err.rfind('\n'); nl != std::string::npos) err = err.substr(nl + 1);
    if (!o.start_error.empty()) {
      report.error = StrCat("cannot run ", commands[i][0], ": ", o.start_error);
    } else if (o.timed_out) {
      report.error = StrCat("no answer within ", FormatDurationShort(timeout));
    } else if (o.exit_code != 0) {
      report.error = err.empty() ? StrCat("ssh exited ", o.exit_code) : err;
    } else {
      report.value = Json::parse(o.out, nullptr, /*allow_exceptions=*/false);
      bool shape_ok = summary ? report.value.is_object() && report.value.contains(kLocalHost)
                              : report.value.is_array();
      if (report.value.is_discarded() || !shape_ok) {
        report.value = nullptr;
        report.error = "unexpected output from canhazgpu status --json";
      } else if (summary) {
        report.value = report.value[kLocalHost];
      }
    }
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace canhazgpu::cli
