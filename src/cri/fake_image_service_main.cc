// cri_fake_image_service: the CRI image-service emulator as a process, for
// the simulated cluster and benchmarks, which need a "container runtime"
// they can start and stop like a real one.
//
//   cri_fake_image_service --socket PATH [--image REF=SIZE ...]
//                          [--present REF=SIZE ...] [--fail REF=MESSAGE ...]
//
// --image puts REF in the registry (pullable), --present on the node
// already, --fail makes its pulls fail with MESSAGE. Prints one line,
// "serving unix://PATH", once it accepts calls; serves until SIGINT or
// SIGTERM, then removes the socket.
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "core/strings.h"
#include "cri/testing/fake_image_service.h"

namespace {

using canhazgpu::cri::testing::FakeImageService;
using canhazgpu::cri::testing::RegistryImage;

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "cri_fake_image_service: %s\n"
               "usage: cri_fake_image_service --socket PATH [--image REF=SIZE ...] "
               "[--present REF=SIZE ...] [--fail REF=MESSAGE ...]\n",
               why.c_str());
  return 2;
}

// "REF=VALUE" at the last '=' for sizes (references have no '='), at the
// first for messages (which may).
bool SplitAt(std::string_view arg, bool last, std::string& ref, std::string& value) {
  std::size_t eq = last ? arg.rfind('=') : arg.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return false;
  }
  ref = std::string(arg.substr(0, eq));
  value = std::string(arg.substr(eq + 1));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket;
  struct Entry {
    std::string flag, ref, value;
  };
  std::vector<Entry> entries;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag != "--socket" && flag != "--image" && flag != "--present" && flag != "--fail") {
      return Usage(canhazgpu::StrCat("unknown argument ", flag));
    }
    if (i + 1 >= argc) {
      return Usage(canhazgpu::StrCat(flag, " needs a value"));
    }
    std::string_view value = argv[++i];
    if (flag == "--socket") {
      socket = std::string(value);
      continue;
    }
    Entry entry{.flag = std::string(flag)};
    if (!SplitAt(value, flag != "--fail", entry.ref, entry.value)) {
      return Usage(canhazgpu::StrCat(flag, " ", value,
                                     ": expected REF=", flag == "--fail" ? "MESSAGE" : "SIZE"));
    }
    entries.push_back(std::move(entry));
  }
  if (socket.empty()) {
    return Usage("--socket is required");
  }

  // Blocked before gRPC starts its threads, so that only sigwait below
  // receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto fake = FakeImageService::Start(socket);
  if (!fake.ok()) {
    std::fprintf(stderr, "cri_fake_image_service: %s\n",
                 std::string(fake.status().message()).c_str());
    return 1;
  }
  for (const Entry& entry : entries) {
    if (entry.flag == "--fail") {
      (*fake)->FailPulls(entry.ref, entry.value);
      continue;
    }
    uint64_t size = 0;
    if (!canhazgpu::ParseInt(entry.value, &size)) {
      return Usage(canhazgpu::StrCat(entry.flag, " ", entry.ref, "=", entry.value,
                                     ": SIZE must be a number of bytes"));
    }
    if (entry.flag == "--image") {
      (*fake)->AddToRegistry(entry.ref, RegistryImage{.size = size});
    } else {
      (*fake)->AddPresent(entry.ref, size);
    }
  }
  std::printf("serving unix://%s\n", socket.c_str());
  std::fflush(stdout);

  int signal = 0;
  sigwait(&stop_signals, &signal);
  (*fake)->Stop();
  return 0;
}
