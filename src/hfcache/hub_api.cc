#include "hfcache/hub_api.h"

#include "core/status_macros.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::hfcache {
namespace {

bool IsHex(std::string_view text, size_t length) {
  if (text.size() != length) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::Status Malformed(std::string_view repo_id, std::string_view why) {
  return absl::InvalidArgumentError(
      StrCat("the Hub's listing of ", std::string(repo_id), " is malformed: ", std::string(why)));
}

}  // namespace

absl::StatusOr<RepoListing> ParseRevisionInfo(std::string_view json, std::string_view repo_id) {
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Malformed(repo_id, "not a JSON object");
  RepoListing listing;
  if (!doc.contains("sha") || !doc["sha"].is_string() ||
      !IsHex(doc["sha"].get<std::string>(), 40)) {
    return Malformed(repo_id, "no 40-hex \"sha\"");
  }
  listing.commit = doc["sha"].get<std::string>();
  if (!doc.contains("siblings") || !doc["siblings"].is_array()) {
    return Malformed(repo_id, "no \"siblings\" list");
  }
  for (const nlohmann::json& sibling : doc["siblings"]) {
    if (!sibling.is_object() || !sibling.contains("rfilename") ||
        !sibling["rfilename"].is_string()) {
      return Malformed(repo_id, "a sibling without \"rfilename\"");
    }
    RepoFile file;
    file.path = sibling["rfilename"].get<std::string>();
    RETURN_IF_ERROR(ValidateRepoFilePath(file.path));
    const nlohmann::json* lfs =
        sibling.contains("lfs") && sibling["lfs"].is_object() ? &sibling["lfs"] : nullptr;
    if (lfs != nullptr) {
      if (!lfs->contains("sha256") || !(*lfs)["sha256"].is_string() || !lfs->contains("size") ||
          !(*lfs)["size"].is_number_unsigned()) {
        return Malformed(repo_id, StrCat(file.path, ": lfs without sha256 and size"));
      }
      file.kind = HashKind::kSha256;
      file.hash = (*lfs)["sha256"].get<std::string>();
      file.size = (*lfs)["size"].get<uint64_t>();
      if (!IsHex(file.hash, 64)) return Malformed(repo_id, StrCat(file.path, ": bad sha256"));
    } else {
      if (!sibling.contains("blobId") || !sibling["blobId"].is_string() ||
          !sibling.contains("size") || !sibling["size"].is_number_unsigned()) {
        return Malformed(repo_id,
                         StrCat(file.path, ": no blobId and size (was ?blobs=true sent?)"));
      }
      file.kind = HashKind::kGitBlobSha1;
      file.hash = sibling["blobId"].get<std::string>();
      file.size = sibling["size"].get<uint64_t>();
      if (!IsHex(file.hash, 40)) return Malformed(repo_id, StrCat(file.path, ": bad blobId"));
    }
    listing.files.push_back(std::move(file));
  }
  return listing;
}

absl::StatusOr<RepoListing> FetchRevision(HubHttp& http, const ModelRef& ref) {
  const size_t slash = ref.repo_id.find('/');
  const std::string path = StrCat("/api/models/", http.Escape(ref.repo_id.substr(0, slash)), "/",
                                  http.Escape(ref.repo_id.substr(slash + 1)), "/revision/",
                                  http.Escape(ref.revision), "?blobs=true");
  ASSIGN_OR_RETURN(HubResponse response, http.Get(path));
  if (response.status != 200) {
    return HubError(response, ref, !http.settings().token.empty(),
                    StrCat("revision ", ref.revision));
  }
  return ParseRevisionInfo(response.body, ref.repo_id);
}

absl::Status HubError(const HubResponse& response, const ModelRef& ref, bool has_token,
                      std::string_view what) {
  const auto code_it = response.headers.find("x-error-code");
  const std::string code = code_it != response.headers.end() ? code_it->second : "";
  const std::string& repo = ref.repo_id;
  const std::string token_hint =
      has_token ? "check that the token has access to it" : "set a Hugging Face token";
  if (code == "GatedRepo" || response.status == 403) {
    return absl::PermissionDeniedError(StrCat(
        "model ", repo, " is gated or the token lacks access: accept its terms on the Hub and ",
        token_hint));
  }
  if (code == "RevisionNotFound") {
    return absl::NotFoundError(StrCat("model ", repo, " has no revision \"", ref.revision,
                                      "\": use an existing branch, tag or commit"));
  }
  if (code == "EntryNotFound") {
    return absl::NotFoundError(
        StrCat("model ", repo, ": ", std::string(what), " is not in the repository"));
  }
  // The Hub answers 401 for repositories that do not exist or are private.
  if (code == "RepoNotFound" || response.status == 401 || response.status == 404) {
    const std::string message = StrCat("model ", repo, " not found, private or gated: ", token_hint,
                                       has_token ? "" : " (HF_TOKEN)", ", or check the id");
    return response.status == 401 ? absl::UnauthenticatedError(message)
                                  : absl::NotFoundError(message);
  }
  if (response.status == 429) {
    return absl::UnavailableError(
        StrCat("the Hub is rate-limiting downloads of ", repo, "; retry later"));
  }
  return absl::UnavailableError(StrCat("the Hub answered HTTP ", response.status, " for ",
                                       std::string(what), " of model ", repo));
}

}  // namespace canhazgpu::hfcache
