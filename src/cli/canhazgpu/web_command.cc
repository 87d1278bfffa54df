// canhazgpu web [--host 127.0.0.1] [--port 8080] [--allowed-hosts NAMES] [--demo]: the
// dashboard, with an overview of the remote_hosts setting's hosts. The HTTP
// server lives in its own executable, canhazgpu-web, installed next to
// canhazgpu, so every other command starts without loading the HTTP and TLS
// libraries; `canhazgpu web` hands over to it with the same arguments.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli/canhazgpu/commands.h"
#include "cli/common/exit_code.h"
#include "core/strings.h"
#include "host/self_executable.h"

namespace canhazgpu::cli {
namespace {

const std::vector<FlagSpec> kWebFlags = {
    {.name = "host",
     .has_value = true,
     .value_name = "ADDRESS",
     .help = "address to listen on (anything but loopback prints a warning)",
     .default_value = "127.0.0.1"},
    {.name = "port",
     .short_name = 'p',
     .has_value = true,
     .value_name = "PORT",
     .help = "port to listen on (0: any free port)",
     .kind = FlagKind::kCount,
     .max = 65535,
     .default_value = "8080"},
    {.name = "allowed-hosts",
     .has_value = true,
     .value_name = "NAMES",
     .help = "host names browsers may use for the dashboard besides localhost, the --host "
             "address and this machine's name (comma-separated)",
     .kind = FlagKind::kList},
    {.name = "max-client-connections",
     .has_value = true,
     .value_name = "N",
     .help = "connections one client address may hold open at once",
     .kind = FlagKind::kPositiveInt,
     .default_value = "16"},
    {.name = "remote-timeout",
     .has_value = true,
     .value_name = "DURATION",
     .help = "give up on a remote host of the overview after this long",
     .kind = FlagKind::kDuration,
     .default_value = "10s"},
    {.name = "ssh",
     .has_value = true,
     .value_name = "PROGRAM",
     .help = "the ssh program for the remote_hosts overview",
     .default_value = "ssh"},
    {.name = "demo",
     .help = "serve simulated data (8 GPUs, a month of history); needs no state file or GPUs"},
};

int (*web_server)(Context&, const Args&) = nullptr;

}  // namespace

std::vector<FlagSpec> WebFlags() { return kWebFlags; }

void SetWebServer(int (*serve)(Context&, const Args&)) { web_server = serve; }

int WebCommand(Context& ctx, const Args& args) {
  if (web_server != nullptr) return web_server(ctx, args);
  std::string server = host::SelfExecutableDir() + "/canhazgpu-web";
  std::vector<std::string> argv = {server, "web"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  execv(server.c_str(), cargv.data());
  std::fprintf(stderr, "canhazgpu: cannot start %s: %s (is canhazgpu-web installed next to it?)\n",
               server.c_str(), std::strerror(errno));
  return kExitRuntime;
}

}  // namespace canhazgpu::cli
