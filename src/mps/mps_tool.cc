// mps_tool: MpsDaemons from a shell, for scripts/device_mps_check.sh on a
// machine with a real GPU (and by hand). Not installed.
//   mps_tool acquire STATE_DIR DRIVER_ROOT GPU_UUID SHARE_ID SHARE_MIB SHAREABLE_MIB
//     prints the share's environment, one NAME=VALUE a line
//   mps_tool release STATE_DIR DRIVER_ROOT SHARE_ID
//   mps_tool recover STATE_DIR DRIVER_ROOT      (no live shares: stops everything)
//   mps_tool pid STATE_DIR DRIVER_ROOT GPU_UUID  the daemon's pid, exit 1 if none
#include <cstdio>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/gpu.h"
#include "core/strings.h"
#include "host/linux_process_table.h"
#include "mps/mps_daemons.h"

namespace {

using canhazgpu::mps::EnvVar;
using canhazgpu::mps::MpsDaemons;

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "mps_tool: %s\n", std::string(status.message()).c_str());
  return 1;
}

int Acquire(MpsDaemons& daemons, const std::vector<std::string>& args) {
  uint64_t share_mib = 0;
  uint64_t shareable_mib = 0;
  if (args.size() != 7 || !canhazgpu::ParseInt(args[5], &share_mib) ||
      !canhazgpu::ParseInt(args[6], &shareable_mib)) {
    std::fprintf(stderr,
                 "usage: mps_tool acquire STATE ROOT UUID SHARE_ID SHARE_MIB SHAREABLE_MIB\n");
    return 2;
  }
  absl::StatusOr<std::vector<EnvVar>> env = daemons.Acquire(
      {args[3], args[4], share_mib * canhazgpu::kMiB, shareable_mib * canhazgpu::kMiB});
  if (!env.ok()) return Fail(env.status());
  for (const EnvVar& var : *env) std::printf("%s=%s\n", var.name.c_str(), var.value.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 3) {
    std::fprintf(stderr, "usage: mps_tool acquire|release|recover|pid STATE_DIR DRIVER_ROOT ...\n");
    return 2;
  }
  canhazgpu::host::LinuxProcessTable processes;
  MpsDaemons daemons({args[2], args[1]}, processes, canhazgpu::RealClock());
  const std::string& verb = args[0];
  if (verb == "acquire") return Acquire(daemons, args);
  if (verb == "release" && args.size() == 4) {
    absl::Status status = daemons.Release(args[3]);
    return status.ok() ? 0 : Fail(status);
  }
  if (verb == "recover" && args.size() == 3) {
    absl::Status status = daemons.Recover({});
    return status.ok() ? 0 : Fail(status);
  }
  if (verb == "pid" && args.size() == 4) {
    std::optional<int64_t> pid = daemons.DaemonPid(args[3]);
    if (!pid) return 1;
    std::printf("%lld\n", static_cast<long long>(*pid));
    return 0;
  }
  std::fprintf(stderr, "mps_tool: unknown command or arguments: %s\n", verb.c_str());
  return 2;
}
