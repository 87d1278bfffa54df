#include "changeset/vllm_checkout.h"

#include <algorithm>
#include <cctype>

#include "core/status_macros.h"
#include "core/strings.h"
#include "git/git.h"

namespace canhazgpu::changeset {
namespace {

struct Upstream {
  std::string name;
  std::string url;
};

// Every "remote.<name>.url" of the configuration, in its order. Read
// without git_remote_list or git_remote_lookup: their regex matching of
// config keys leaks pcre2 match data in libgit2 1.5.
absl::StatusOr<std::vector<Upstream>> ListRemotes(git_repository* repo) {
  git_config* raw_config = nullptr;
  int code = git_repository_config_snapshot(&raw_config, repo);
  if (code < 0) return git::Error(code, "reading the git configuration");
  git::Config config(raw_config);
  std::vector<Upstream> remotes;
  code = git_config_foreach(
      config.get(),
      [](const git_config_entry* entry, void* payload) {
        std::string_view name = entry->name;  // lowercased section and key
        if (name.starts_with("remote.") && name.ends_with(".url") && name.size() > 11) {
          static_cast<std::vector<Upstream>*>(payload)->push_back(
              {std::string(name.substr(7, name.size() - 11)), entry->value});
        }
        return 0;
      },
      &remotes);
  if (code < 0) return git::Error(code, "reading the git remotes");
  return remotes;
}

absl::StatusOr<Upstream> FindUpstream(git_repository* repo) {
  ASSIGN_OR_RETURN(std::vector<Upstream> remotes, ListRemotes(repo));
  for (const Upstream& r : remotes) {
    if (IsVllmUpstreamUrl(r.url)) return r;
  }
  for (const Upstream& r : remotes) {
    if (r.name == "origin") return r;
  }
  return absl::FailedPreconditionError(
      "no git remote points at vllm-project/vllm and there is no 'origin'; add one: git remote "
      "add upstream https://github.com/vllm-project/vllm.git");
}

// ssh-agent for SSH URLs; anything else (a token in the URL, a credential
// helper) is left to libgit2, which never prompts.
int AgentCredentials(git_credential** out, const char* /*url*/, const char* username,
                     unsigned int allowed, void* /*payload*/) {
  if ((allowed & GIT_CREDENTIAL_SSH_KEY) != 0) {
    return git_credential_ssh_key_from_agent(out, username != nullptr ? username : "git");
  }
  return GIT_PASSTHROUGH;
}

absl::Status Fetch(git_repository* repo, const Upstream& upstream) {
  // The remote as configured (its refspecs, url.*.insteadOf), as `git fetch
  // <remote>` uses it; this leaks a few KiB in libgit2 1.5 (see ListRemotes),
  // once, and only when asked to fetch.
  git_remote* raw = nullptr;
  int code = git_remote_lookup(&raw, repo, upstream.name.c_str());
  if (code < 0) return git::Error(code, StrCat("looking up the remote ", upstream.name));
  git::Remote remote(raw);
  git_fetch_options options = GIT_FETCH_OPTIONS_INIT;
  options.callbacks.credentials = AgentCredentials;
  code = git_remote_fetch(remote.get(), nullptr, &options, "fetch (k8shazgpu vllm)");
  if (code < 0)
    return git::Error(code, StrCat("fetching ", upstream.name, " (", upstream.url, ")"));
  return absl::OkStatus();
}

// refs/remotes/<remote>/main, else whatever the remote's HEAD points at.
absl::StatusOr<std::pair<std::string, git_oid>> UpstreamMain(git_repository* repo,
                                                             const std::string& remote) {
  for (const std::string& name :
       {StrCat("refs/remotes/", remote, "/main"), StrCat("refs/remotes/", remote, "/HEAD")}) {
    git_reference* raw = nullptr;
    if (git_reference_lookup(&raw, repo, name.c_str()) < 0) continue;
    git::Reference ref(raw);
    git_reference* resolved_raw = nullptr;
    if (git_reference_resolve(&resolved_raw, ref.get()) < 0) continue;
    git::Reference resolved(resolved_raw);
    git_object* commit = nullptr;
    if (git_reference_peel(&commit, resolved.get(), GIT_OBJECT_COMMIT) < 0) continue;
    git::Object owned(commit);
    return std::make_pair(std::string(git_reference_name(resolved.get())),
                          *git_object_id(owned.get()));
  }
  return absl::FailedPreconditionError(
      StrCat("the remote '", remote, "' has no main branch here (refs/remotes/", remote,
             "/main); run git fetch ", remote, " or pass --fetch"));
}

}  // namespace

bool IsVllmUpstreamUrl(std::string_view url) {
  std::string s(url);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  while (s.ends_with('/')) s.pop_back();
  if (s.ends_with(".git")) s.resize(s.size() - 4);
  const std::string_view tail = "vllm-project/vllm";
  if (!s.ends_with(tail)) return false;
  if (s.size() == tail.size()) return true;
  const char before = s[s.size() - tail.size() - 1];
  return before == '/' || before == ':';
}

bool IsInsideVllmCheckout(const std::filesystem::path& dir) {
  absl::StatusOr<git::Repository> found = git::Discover(dir);
  if (!found.ok()) return false;
  const char* workdir = git_repository_workdir(found->get());
  std::error_code error;
  return workdir != nullptr && std::filesystem::is_regular_file(
                                   std::filesystem::path(workdir) / "vllm" / "__init__.py", error);
}

std::string LocalPathAsFileUrl(std::string_view url, const std::filesystem::path& base) {
  if (url.empty() || url.find("://") != std::string_view::npos) return std::string(url);
  // git's own rule: "host:path" (scp-like) when a ':' comes before any '/'.
  const size_t colon = url.find(':');
  if (colon != std::string_view::npos && colon < url.find('/')) return std::string(url);
  std::filesystem::path path(url);
  if (path.is_relative()) path = base / path;
  return StrCat("file://", path.lexically_normal().string());
}

absl::StatusOr<VllmCheckout> DetectVllmCheckout(const std::filesystem::path& dir, bool fetch) {
  absl::StatusOr<git::Repository> found = git::Discover(dir);
  if (!found.ok()) {
    if (found.status().code() != absl::StatusCode::kNotFound) return found.status();
    return absl::FailedPreconditionError(
        StrCat(dir.string(), " is not inside a git work tree; run this from your vLLM checkout"));
  }
  git::Repository repo = *std::move(found);
  const char* workdir = git_repository_workdir(repo.get());
  if (workdir == nullptr) {
    return absl::FailedPreconditionError(
        StrCat(git_repository_path(repo.get()), " is a bare repository; run this from a checkout"));
  }
  VllmCheckout out;
  out.top_level = std::filesystem::path(workdir).lexically_normal();
  if (out.top_level.has_filename() == false) out.top_level = out.top_level.parent_path();
  std::error_code error;
  if (!std::filesystem::is_regular_file(out.top_level / "vllm" / "__init__.py", error)) {
    return absl::FailedPreconditionError(
        StrCat(out.top_level.string(),
               " is not a vLLM checkout: it has no vllm/__init__.py at its top level"));
  }
  ASSIGN_OR_RETURN(Upstream upstream, FindUpstream(repo.get()));
  out.remote_name = upstream.name;
  out.remote_url = LocalPathAsFileUrl(upstream.url, out.top_level);
  if (fetch) RETURN_IF_ERROR(Fetch(repo.get(), upstream));
  ASSIGN_OR_RETURN(auto main, UpstreamMain(repo.get(), upstream.name));
  out.upstream_ref = main.first;

  git_reference* raw_head = nullptr;
  int code = git_repository_head(&raw_head, repo.get());
  if (code == GIT_EUNBORNBRANCH || code == GIT_ENOTFOUND) {
    return absl::FailedPreconditionError(
        StrCat(out.top_level.string(), " has no commit checked out (HEAD is unborn)"));
  }
  if (code < 0) return git::Error(code, "reading HEAD");
  git::Reference head(raw_head);
  git_object* head_commit = nullptr;
  code = git_reference_peel(&head_commit, head.get(), GIT_OBJECT_COMMIT);
  if (code < 0) return git::Error(code, "reading HEAD's commit");
  git::Object head_object(head_commit);
  const git_oid head_id = *git_object_id(head_object.get());
  out.head = git::ToHex(head_id);
  if (git_repository_head_detached(repo.get()) != 1) {
    out.branch = git_reference_shorthand(head.get());
  }

  git_oid base;
  code = git_merge_base(&base, repo.get(), &head_id, &main.second);
  if (code == GIT_ENOTFOUND) {
    return absl::FailedPreconditionError(StrCat("HEAD and ", out.upstream_ref,
                                                " share no history (no merge base); is '",
                                                upstream.name, "' really vLLM?"));
  }
  if (code < 0) return git::Error(code, StrCat("finding the merge base with ", out.upstream_ref));
  out.merge_base = git::ToHex(base);
  return out;
}

}  // namespace canhazgpu::changeset
