#include "git/git.h"

#include <mutex>

#include "core/strings.h"
#include "git/guarded_socket.h"

namespace canhazgpu::git {

void EnsureInitialized() {
  // Never shut down: handles may outlive any owner we could pick, and the
  // library's global state is small.
  static std::once_flag once;
  std::call_once(once, [] {
    git_libgit2_init();
    InstallGuardedSockets();
  });
}

absl::Status Error(int code, std::string_view what) {
  const git_error* last = git_error_last();
  std::string message = StrCat(
      std::string(what), ": ",
      last != nullptr && last->message != nullptr ? last->message : StrCat("libgit2 error ", code));
  switch (code) {
    case GIT_ENOTFOUND:
      return absl::NotFoundError(message);
    case GIT_EAUTH:
    case GIT_ECERTIFICATE:
      return absl::PermissionDeniedError(message);
    case GIT_EEXISTS:
      return absl::AlreadyExistsError(message);
    case GIT_ECONFLICT:
    case GIT_EMERGECONFLICT:
    case GIT_ELOCKED:
    case GIT_EUNCOMMITTED:
      return absl::FailedPreconditionError(message);
    default:
      break;
  }
  if (last != nullptr && (last->klass == GIT_ERROR_NET || last->klass == GIT_ERROR_HTTP ||
                          last->klass == GIT_ERROR_SSH || last->klass == GIT_ERROR_OS)) {
    return absl::UnavailableError(message);
  }
  return absl::InternalError(message);
}

absl::StatusOr<Repository> Open(const std::filesystem::path& path) {
  EnsureInitialized();
  git_repository* raw = nullptr;
  int code = git_repository_open_ext(&raw, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr);
  if (code < 0) return Error(code, StrCat("opening git repository ", path.string()));
  return Repository(raw);
}

absl::StatusOr<Repository> Discover(const std::filesystem::path& start) {
  EnsureInitialized();
  git_repository* raw = nullptr;
  int code = git_repository_open_ext(&raw, start.c_str(), 0, nullptr);
  if (code == GIT_ENOTFOUND) {
    return absl::NotFoundError(
        StrCat(start.string(), " is not inside a git repository (nor any parent)"));
  }
  if (code < 0) return Error(code, StrCat("opening git repository at ", start.string()));
  return Repository(raw);
}

std::string ToHex(const git_oid& oid) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof(hex), &oid);
  return std::string(hex, GIT_OID_HEXSZ);
}

absl::StatusOr<git_oid> ParseOid(std::string_view hex) {
  EnsureInitialized();
  git_oid oid;
  if (hex.size() != GIT_OID_HEXSZ || git_oid_fromstrn(&oid, hex.data(), hex.size()) < 0) {
    return absl::InvalidArgumentError(
        StrCat("'", std::string(hex), "' is not a commit id (40 hex digits)"));
  }
  return oid;
}

}  // namespace canhazgpu::git
