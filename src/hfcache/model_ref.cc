#include "hfcache/model_ref.h"

#include <fnmatch.h>

#include "absl/strings/str_split.h"
#include "core/strings.h"

namespace canhazgpu::hfcache {
namespace {

bool IsIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

absl::Status BadRepoId(std::string_view repo_id, std::string_view why) {
  return absl::InvalidArgumentError(StrCat("invalid model id \"", std::string(repo_id),
                                           "\": ", std::string(why),
                                           " (expected org/name, e.g. Qwen/Qwen3-0.6B)"));
}

// Segments must not be empty, "." or ".." (checked by both path validators).
bool HasBadSegment(std::string_view path) {
  for (absl::string_view segment : absl::StrSplit(std::string(path), '/')) {
    if (segment.empty() || segment == "." || segment == "..") return true;
  }
  return false;
}

bool HasControlOrBackslash(std::string_view text) {
  for (char c : text) {
    if (c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

}  // namespace

absl::Status ValidateRepoId(std::string_view repo_id) {
  if (repo_id.size() > 96) return BadRepoId(repo_id, "longer than 96 characters");
  const size_t slash = repo_id.find('/');
  if (slash == std::string_view::npos || repo_id.find('/', slash + 1) != std::string_view::npos) {
    return BadRepoId(repo_id, "needs exactly one '/'");
  }
  for (std::string_view part : {repo_id.substr(0, slash), repo_id.substr(slash + 1)}) {
    if (part.empty()) return BadRepoId(repo_id, "empty organisation or name");
    for (char c : part) {
      if (!IsIdChar(c)) return BadRepoId(repo_id, "only letters, digits, '.', '_' and '-' allowed");
    }
    if (part.front() == '.' || part.front() == '-' || part.back() == '.' || part.back() == '-') {
      return BadRepoId(repo_id, "a part starts or ends with '.' or '-'");
    }
    if (part.find("--") != std::string_view::npos || part.find("..") != std::string_view::npos) {
      return BadRepoId(repo_id, "\"--\" and \"..\" are not allowed");
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateRevision(std::string_view revision) {
  if (revision.empty() || revision.front() == '/' || HasControlOrBackslash(revision) ||
      HasBadSegment(revision)) {
    return absl::InvalidArgumentError(
        StrCat("invalid revision \"", std::string(revision),
               "\": use a branch, tag or commit (e.g. main, v1.0, refs/pr/1)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateRepoFilePath(std::string_view path) {
  if (path.empty() || path.front() == '/' || HasControlOrBackslash(path) || HasBadSegment(path)) {
    return absl::InvalidArgumentError(StrCat("the Hub listed an unsafe file path \"",
                                             std::string(path), "\"; refusing to download it"));
  }
  return absl::OkStatus();
}

bool IsCommitHash(std::string_view revision) {
  if (revision.size() != 40) return false;
  for (char c : revision) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string RepoFolderName(std::string_view repo_id) {
  std::string name = "models";
  for (absl::string_view part : absl::StrSplit(std::string(repo_id), '/')) {
    name += "--";
    name.append(part.data(), part.size());
  }
  return name;
}

bool MatchesAllowPatterns(std::string_view path, const std::vector<std::string>& patterns) {
  if (patterns.empty()) return true;
  const std::string subject(path);
  for (const std::string& pattern : patterns) {
    // huggingface_hub turns "dir/" into "dir/*". Python's fnmatch lets '*'
    // cross '/' (no FNM_PATHNAME) and has no backslash escapes (FNM_NOESCAPE).
    const std::string glob = !pattern.empty() && pattern.back() == '/' ? pattern + "*" : pattern;
    if (fnmatch(glob.c_str(), subject.c_str(), FNM_NOESCAPE) == 0) return true;
  }
  return false;
}

}  // namespace canhazgpu::hfcache
