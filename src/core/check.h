// CANHAZGPU_CHECK(condition): an invariant of ours that no input can break
// (bad input gets an absl::Status, never a CHECK). When one does not hold the
// program is wrong, and going on would give a wrong answer or touch freed
// memory: say where, and abort for a core dump. Unlike assert(), it stays in
// every build type (our binaries are built with NDEBUG).
#pragma once

namespace canhazgpu::check_internal {

// Prints "FILE:LINE: check failed: CONDITION" to stderr and aborts.
[[noreturn]] void Fail(const char* file, int line, const char* condition);

}  // namespace canhazgpu::check_internal

#define CANHAZGPU_CHECK(condition)                                       \
  do {                                                                   \
    if (!(condition)) {                                                  \
      ::canhazgpu::check_internal::Fail(__FILE__, __LINE__, #condition); \
    }                                                                    \
  } while (false)
