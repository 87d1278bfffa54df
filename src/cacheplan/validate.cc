#include "cacheplan/validate.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "absl/strings/ascii.h"
#include "cacheplan/image_ref.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cacheplan {
namespace {

absl::Status Bad(const CacheItem& item, std::string_view why) {
  // Every part may be the plan author's text: shown escaped, on one line.
  return absl::InvalidArgumentError(EscapeForDisplay(
      StrCat("cache item '", item.name.empty() ? "<unnamed>" : item.name, "': ", why)));
}

// The schemes a node's libgit2 fetches from, and scp-like git@host:path.
bool ValidGitUrl(std::string_view url) {
  for (std::string_view scheme : {"https://", "http://", "ssh://", "git://", "file://"}) {
    if (!url.starts_with(scheme)) continue;
    std::string_view rest = url.substr(scheme.size());
    if (scheme == "file://") return rest.starts_with('/') && rest.size() > 1;
    size_t slash = rest.find('/');
    std::string_view host = rest.substr(0, slash);
    return !host.empty() && slash != std::string_view::npos && slash + 1 < rest.size();
  }
  if (url.starts_with("git@")) {
    size_t colon = url.find(':');
    return colon != std::string_view::npos && colon > 4 && colon + 1 < url.size() &&
           url.find_first_of(" /", 4) > colon;
  }
  return false;
}

// git check-ref-format, the parts a person can get wrong on a command line.
bool ValidBranch(std::string_view b) {
  if (b.empty() || b.starts_with('-') || b.starts_with('/') || b.ends_with('/') ||
      b.ends_with('.') || b.ends_with(".lock") || b == "@") {
    return false;
  }
  if (b.find("..") != std::string_view::npos || b.find("//") != std::string_view::npos ||
      b.find("@{") != std::string_view::npos) {
    return false;
  }
  return std::none_of(b.begin(), b.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ' ' || c == '~' || c == '^' ||
           c == ':' || c == '?' || c == '*' || c == '[' || c == '\\';
  });
}

bool ValidCommit(std::string_view c) {
  return ((c.size() >= 7 && c.size() <= 40) || c.size() == 64) &&
         std::all_of(c.begin(), c.end(),
                     [](char ch) { return absl::ascii_isxdigit(static_cast<unsigned char>(ch)); });
}

// Hugging Face: "name" or "org/name", each letters, digits, '-', '_', '.',
// not starting or ending with '-' or '.', no "--" or "..", name up to 96.
bool ValidRepoIdPart(std::string_view p) {
  if (p.empty() || p.size() > 96) return false;
  if (p.front() == '-' || p.front() == '.' || p.back() == '-' || p.back() == '.') return false;
  if (p.find("--") != std::string_view::npos || p.find("..") != std::string_view::npos)
    return false;
  return std::all_of(p.begin(), p.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}
bool ValidRepoId(std::string_view id) {
  std::vector<std::string_view> parts = Split(id, '/');
  if (parts.size() > 2) return false;
  return std::all_of(parts.begin(), parts.end(), ValidRepoIdPart);
}

// A label value (empty allowed) or the name part of a key: up to 63,
// alphanumerics at the ends, '-', '_', '.' inside.
bool ValidLabelName(std::string_view v, bool allow_empty) {
  if (v.empty()) return allow_empty;
  if (v.size() > 63) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(v.front()) || !alnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}
bool ValidDnsSubdomain(std::string_view v) {
  if (v.empty() || v.size() > 253) return false;
  for (std::string_view label : Split(v, '.')) {
    if (!IsItemName(label)) return false;
  }
  return true;
}
bool ValidLabelKey(std::string_view key) {
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) return ValidLabelName(key, false);
  return ValidDnsSubdomain(key.substr(0, slash)) && ValidLabelName(key.substr(slash + 1), false);
}

// Lowercase, every run of other characters one '-', trimmed, at most 63.
std::string Sanitize(std::string_view text) {
  std::string out;
  for (char c : text) {
    char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (IsLowerAlnum(lower)) {
      out.push_back(lower);
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
  }
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

// "owner/name" of a git URL, without ".git".
std::string RepoPath(std::string_view url) {
  std::string_view path = url;
  if (size_t scheme = url.find("://"); scheme != std::string_view::npos) {
    path = url.substr(scheme + 3);
    size_t slash = path.find('/');
    path = slash == std::string_view::npos ? "" : path.substr(slash + 1);
  } else if (size_t colon = url.find(':'); colon != std::string_view::npos) {
    path = url.substr(colon + 1);
  }
  while (path.ends_with('/')) path.remove_suffix(1);
  if (path.ends_with(".git")) path.remove_suffix(4);
  std::vector<std::string_view> parts = Split(path, '/', /*skip_empty=*/true);
  if (parts.size() > 2) parts.erase(parts.begin(), parts.end() - 2);
  std::vector<std::string> kept(parts.begin(), parts.end());
  return Join(kept, "/");
}

// A gitRepo item's source: a URL the node may fetch, a branch or a commit.
absl::Status ValidateGitSource(const CacheItem& item, const ItemRules& rules) {
  if (!item.git_repo || item.git_repo->url.empty()) return Bad(item, "a gitRepo needs gitRepo.url");
  const GitRepoSource& r = *item.git_repo;
  if (!ValidGitUrl(r.url)) {
    return Bad(item, StrCat("git URL \"", r.url,
                            "\" must be https://, http://, ssh://, git://, file:///PATH or "
                            "git@HOST:PATH"));
  }
  if (r.url.starts_with("file://") && !rules.allow_local_git) {
    return Bad(item, StrCat("git URL \"", r.url,
                            "\" names a path on the node; a plan may not make the node copy "
                            "its own files into the shared cache (k8shazgpu-node "
                            "--cache-local-git on allows it, for tests only)"));
  }
  if (!r.branch.empty() && !r.commit.empty()) {
    return Bad(item, "give a branch or a commit, not both");
  }
  if (!r.branch.empty() && !ValidBranch(r.branch)) {
    return Bad(item, StrCat("\"", r.branch, "\" is not a valid branch name"));
  }
  if (!r.commit.empty() && !ValidCommit(r.commit)) {
    return Bad(item, StrCat("commit \"", r.commit, "\" must be 7 to 40 hex digits (or 64)"));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsItemName(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  if (!IsLowerAlnum(name.front()) || !IsLowerAlnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

bool IsRfc3339(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  auto digits = [&](size_t at, size_t n) {
    if (at + n > t.size()) return false;
    return std::all_of(t.begin() + at, t.begin() + at + n,
                       [](char ch) { return absl::ascii_isdigit(static_cast<unsigned char>(ch)); });
  };
  if (t.size() < 20 || !digits(0, 4) || t[4] != '-' || !digits(5, 2) || t[7] != '-' ||
      !digits(8, 2) || (t[10] != 'T' && t[10] != 't') || !digits(11, 2) || t[13] != ':' ||
      !digits(14, 2) || t[16] != ':' || !digits(17, 2)) {
    return false;
  }
  size_t at = 19;
  if (t[at] == '.') {
    size_t start = ++at;
    while (at < t.size() && absl::ascii_isdigit(static_cast<unsigned char>(t[at]))) ++at;
    if (at == start) return false;
  }
  std::string_view zone = t.substr(at);
  if (zone == "Z" || zone == "z") return true;
  return zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && digits(at + 1, 2) &&
         zone[3] == ':' && digits(at + 4, 2);
}

absl::Status ValidateItem(const CacheItem& item, const ItemRules& rules) {
  if (!IsItemName(item.name)) {
    return Bad(item,
               "the name must be 1 to 63 lowercase letters, digits or '-', starting and ending "
               "with a letter or digit");
  }
  const bool image = item.type == kImage;
  const bool repo = item.type == kGitRepo;
  const bool model = item.type == kHfModel;
  if (!image && !repo && !model) {
    return Bad(item, StrCat("unknown type \"", item.type, "\"; use image, gitRepo or hfModel"));
  }
  if ((item.image && !image) || (item.git_repo && !repo) || (item.hf_model && !model)) {
    return Bad(item, StrCat("a ", item.type, " item has only its ", item.type, " source"));
  }
  if (image) {
    if (!item.image || item.image->ref.empty()) return Bad(item, "an image needs image.ref");
    absl::StatusOr<ImageRef> parsed = ParseImageRef(item.image->ref);
    if (!parsed.ok()) return Bad(item, std::string(parsed.status().message()));
  }
  if (repo) {
    RETURN_IF_ERROR(ValidateGitSource(item, rules));
  }
  if (model) {
    if (!item.hf_model || item.hf_model->repo_id.empty()) {
      return Bad(item, "an hfModel needs hfModel.repoId");
    }
    const HfModelSource& m = *item.hf_model;
    if (!ValidRepoId(m.repo_id)) {
      return Bad(item, StrCat("model id \"", m.repo_id,
                              "\" must be NAME or ORG/NAME of letters, digits, '-', '_' and '.'"));
    }
    if (!m.revision.empty() && !ValidBranch(m.revision)) {
      return Bad(item, StrCat("\"", m.revision, "\" is not a valid revision"));
    }
    for (const std::string& pattern : m.allow_patterns) {
      if (pattern.empty()) return Bad(item, "an allow pattern is empty");
    }
  }
  for (const auto& [key, value] : item.node_selector) {
    if (!ValidLabelKey(key))
      return Bad(item, StrCat("node selector key \"", key, "\" is not a label key"));
    if (!ValidLabelName(value, true)) {
      return Bad(item,
                 StrCat("node selector value \"", value, "\" for ", key, " is not a label value"));
    }
  }
  if (item.pull_secret) {
    if (!IsItemName(item.pull_secret->namespace_name) ||
        !ValidDnsSubdomain(item.pull_secret->name)) {
      return Bad(item, StrCat("pull secret \"", item.pull_secret->namespace_name, "/",
                              item.pull_secret->name, "\" must be NAMESPACE/NAME"));
    }
  }
  if (!item.refresh_requested_at.empty() && !IsRfc3339(item.refresh_requested_at)) {
    return Bad(item, StrCat("refreshRequestedAt \"", item.refresh_requested_at,
                            "\" is not an RFC 3339 time"));
  }
  return absl::OkStatus();
}

absl::Status ValidateItems(const std::vector<CacheItem>& items, const ItemRules& rules) {
  std::set<std::string> seen;
  for (const CacheItem& item : items) {
    if (absl::Status s = ValidateItem(item, rules); !s.ok()) return s;
    if (!seen.insert(item.name).second) {
      return absl::InvalidArgumentError(EscapeForDisplay(
          StrCat("cache item '", item.name, "' is in the plan twice; item names must be unique")));
    }
  }
  return absl::OkStatus();
}

absl::Status Validate(const CachePlan& plan, const ItemRules& rules) {
  absl::Status s = ValidateItems(plan.items, rules);
  if (s.ok()) return s;
  return absl::InvalidArgumentError(
      StrCat("CachePlan ", EscapeForDisplay(plan.name), ": ", s.message()));
}

std::string DefaultItemName(const CacheItem& item) {
  std::string name;
  if (item.image) {
    absl::StatusOr<ImageRef> ref = ParseImageRef(item.image->ref);
    if (ref.ok()) {
      std::string_view repo = ref->repository;
      std::string_view last = repo.substr(repo.rfind('/') + 1);
      std::string tag = ref->tag;
      if (tag.empty() && !ref->digest.empty()) {
        tag = ref->digest.substr(ref->digest.find(':') + 1, 12);
      }
      name = Sanitize(tag.empty() ? std::string(last) : StrCat(last, "-", tag));
    } else {
      name = Sanitize(item.image->ref);
    }
  } else if (item.git_repo) {
    std::string suffix = item.git_repo->branch;
    if (suffix.empty() && !item.git_repo->commit.empty())
      suffix = item.git_repo->commit.substr(0, 12);
    std::string path = RepoPath(item.git_repo->url);
    name = Sanitize(suffix.empty() ? path : StrCat(path, "-", suffix));
  } else if (item.hf_model) {
    const std::string& revision = item.hf_model->revision;
    name = Sanitize(revision.empty() || revision == "main"
                        ? item.hf_model->repo_id
                        : StrCat(item.hf_model->repo_id, "-", revision));
  }
  return name.empty() ? "item" : name;
}

}  // namespace canhazgpu::cacheplan
