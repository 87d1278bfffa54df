// canhazgpu debug cel-conformance [--verbose] PATH...: runs CEL conformance
// case files (shared/cel-conformance/FORMAT.md) against the evaluator the
// --where selectors use; one line per file, then the totals. Exit 0 when it
// ran, whatever the counts: the counts are the result.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cel/conformance.h"
#include "cli/canhazgpu/commands.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli {
namespace {

const std::vector<FlagSpec> kDebugFlags = {
    {.name = "verbose", .short_name = 'v', .help = "list each failure with expected and actual"},
};

// The *.jsonl files named by `paths` (directories are searched, sorted).
absl::StatusOr<std::vector<std::string>> CaseFiles(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::recursive_directory_iterator(path, ec)) {
        if (entry.is_regular_file() && entry.path().extension() == ".jsonl")
          found.push_back(entry.path().string());
      }
      if (ec) return absl::InvalidArgumentError(StrCat(path, ": ", ec.message()));
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(path, ec)) {
      files.push_back(path);
    } else {
      return absl::InvalidArgumentError(StrCat(path, ": no such file or directory"));
    }
  }
  return files;
}

absl::Status CelConformance(const ParsedFlags& flags) {
  std::vector<std::string> paths(flags.positional.begin() + 1, flags.positional.end());
  if (paths.empty())
    return absl::InvalidArgumentError("debug cel-conformance: name at least one PATH");
  ASSIGN_OR_RETURN(std::vector<std::string> files, CaseFiles(paths));
  int passed = 0, failed = 0, skipped = 0;
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(cel::ConformanceFileResult r, cel::RunConformanceFile(file));
    std::printf("%s: %d passed, %d failed, %d skipped\n", file.c_str(), r.passed, r.failed,
                r.skipped);
    if (flags.Has("verbose")) {
      for (const cel::ConformanceFailure& f : r.failures) {
        std::printf("  FAIL %s%s\n    expr:     %s\n    expected: %s\n    actual:   %s\n",
                    f.id.c_str(), f.unsure ? " (unsure)" : "", f.expr.c_str(), f.expected.c_str(),
                    f.actual.c_str());
      }
    }
    passed += r.passed, failed += r.failed, skipped += r.skipped;
  }
  std::printf("total: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return absl::OkStatus();
}

absl::Status Debug(Context&, const ParsedFlags& flags) {
  if (flags.positional.empty())
    return absl::InvalidArgumentError("debug: name a tool: cel-conformance");
  if (flags.positional[0] == "cel-conformance") return CelConformance(flags);
  return absl::InvalidArgumentError(
      StrCat("debug: unknown tool '", flags.positional[0], "' (cel-conformance)"));
}

}  // namespace

std::vector<FlagSpec> DebugFlags() { return kDebugFlags; }

int DebugCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, kDebugFlags, "debug", Debug);
}

}  // namespace canhazgpu::cli
