// libnvidia-ml loaded at run time: dlopen, symbol lookup, nvmlInit_v2 and,
// on destruction, nvmlShutdown and dlclose. NvmlGpuProvider and
// NvmlHealthMonitor each hold one; NVML counts its initialisations, so two
// holders in one process are fine. The object itself is immutable after
// Open() and safe to share between threads; NVML's functions are
// thread-safe.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gpu/nvml_abi.h"

namespace canhazgpu::gpu {

inline constexpr char kDefaultNvmlLibrary[] = "libnvidia-ml.so.1";

class NvmlLibrary {
 public:
  // Loads the library and calls nvmlInit_v2. A host without the library gets
  // FailedPrecondition with the dlopen reason; a failed initialisation gets
  // FailedPrecondition with NVML's message.
  static absl::StatusOr<std::unique_ptr<NvmlLibrary>> Open(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // Points `fn` at the exported function `name`; false when it is missing.
  template <typename Fn>
  bool Resolve(const char* name, Fn* fn) const {
    *fn = reinterpret_cast<Fn>(Symbol(name));
    return *fn != nullptr;
  }
  // Tries each name in turn (a _v3 and its older _v2 of the same layout).
  template <typename Fn>
  bool ResolveAny(std::initializer_list<const char*> names, Fn* fn) const {
    for (const char* name : names) {
      if (Resolve(name, fn)) return true;
    }
    return false;
  }

  // Resolve and ResolveAny for functions the caller cannot do without:
  // FailedPrecondition "NVIDIA library PATH lacks NAME; the driver is too
  // old" when missing (naming the first of `names`).
  template <typename Fn>
  absl::Status Require(const char* name, Fn* fn) const {
    return Resolve(name, fn) ? absl::OkStatus() : Missing(name);
  }
  template <typename Fn>
  absl::Status RequireAny(std::initializer_list<const char*> names, Fn* fn) const {
    return ResolveAny(names, fn) ? absl::OkStatus() : Missing(*names.begin());
  }

  // nvmlErrorString: NVML's text for a return code.
  const char* ErrorString(nvmlReturn_t rc) const { return error_string_(rc); }
  const std::string& path() const { return path_; }

 private:
  NvmlLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* Symbol(const char* name) const;
  absl::Status Missing(const char* name) const;

  void* handle_;
  std::string path_;
  nvmlReturn_t (*shutdown_)() = nullptr;
  const char* (*error_string_)(nvmlReturn_t) = nullptr;
};

}  // namespace canhazgpu::gpu
