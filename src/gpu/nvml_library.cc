#include "gpu/nvml_library.h"

#include <dlfcn.h>

#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::gpu {

absl::StatusOr<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Open(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        StrCat("NVIDIA driver library not available (", dlerror(),
               "); install the NVIDIA driver, or use --provider fake for a simulated host"));
  }
  // From here the destructor closes the handle; it calls nvmlShutdown only
  // once nvmlInit_v2 has succeeded.
  std::unique_ptr<NvmlLibrary> library(new NvmlLibrary(handle, path));
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  RETURN_IF_ERROR(library->Require("nvmlInit_v2", &init));
  RETURN_IF_ERROR(library->Require("nvmlShutdown", &shutdown));
  RETURN_IF_ERROR(library->Require("nvmlErrorString", &library->error_string_));
  nvmlReturn_t rc = init();
  if (rc != NVML_SUCCESS) {
    return absl::FailedPreconditionError(
        StrCat("NVML initialisation failed: ", library->ErrorString(rc)));
  }
  library->shutdown_ = shutdown;
  return library;
}

NvmlLibrary::~NvmlLibrary() {
  if (shutdown_ != nullptr) shutdown_();
  dlclose(handle_);
}

void* NvmlLibrary::Symbol(const char* name) const { return dlsym(handle_, name); }

absl::Status NvmlLibrary::Missing(const char* name) const {
  return absl::FailedPreconditionError(
      StrCat("NVIDIA library ", path_, " lacks ", name, "; the driver is too old"));
}

}  // namespace canhazgpu::gpu
