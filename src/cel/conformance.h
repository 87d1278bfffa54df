// Runs CEL conformance case files (JSON Lines in the format of
// shared/cel-conformance/FORMAT.md: cel-spec cases and DRA selector cases)
// against this evaluator and reports per file.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu::cel {

struct ConformanceFailure {
  std::string id;  // "file/section/name"
  std::string expr;
  std::string expected;
  std::string actual;
  bool unsure = false;  // a DRA case marked "unsure" (settled by source reading only)
};

struct ConformanceFileResult {
  std::string path;
  int passed = 0;
  int failed = 0;
  int skipped = 0;
  std::vector<ConformanceFailure> failures;
};

// Runs every case of one file. An unreadable file, one that is not a
// regular file or is over 16 MiB, or a line that is not a case is an error;
// a case this evaluator cannot represent is skipped.
absl::StatusOr<ConformanceFileResult> RunConformanceFile(const std::string& path);

// The content of a case file, within the limits above (exposed for tests).
absl::StatusOr<std::string> ReadCaseFile(const std::string& path);

// Runs one case line (exposed for tests). Returns the outcome into `result`.
absl::Status RunConformanceLine(const std::string& line, ConformanceFileResult* result);

}  // namespace canhazgpu::cel
