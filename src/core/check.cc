#include "core/check.h"

#include <cstdio>
#include <cstdlib>

namespace canhazgpu::check_internal {

void Fail(const char* file, int line, const char* condition) {
  // stdio, not a logger: this must work however broken the program is.
  std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, condition);
  std::fflush(stderr);
  std::abort();
}

}  // namespace canhazgpu::check_internal
