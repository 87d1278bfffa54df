#include "cli/k8shazgpu/vllm_caches.h"

#include <algorithm>
#include <set>

#include "cacheplan/image_ref.h"
#include "cacheplan/summary.h"
#include "cacheplan/validate.h"
#include "changeset/change_set.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

using cacheplan::CacheItem;
using cacheplan::NodeItem;

// "--name value" or "--name=value" at argv[i]; advances i past a value.
std::optional<std::string> OptionValue(const std::vector<std::string>& argv, size_t& i,
                                       std::string_view name) {
  const std::string& word = argv[i];
  if (word == name) {
    if (i + 1 >= argv.size()) return std::nullopt;
    return argv[++i];
  }
  if (word.size() > name.size() && word.compare(0, name.size(), name) == 0 &&
      word[name.size()] == '=') {
    return word.substr(name.size() + 1);
  }
  return std::nullopt;
}

bool SameImage(const std::string& a, const std::string& b) {
  absl::StatusOr<cacheplan::ImageRef> ra = cacheplan::ParseImageRef(a);
  absl::StatusOr<cacheplan::ImageRef> rb = cacheplan::ParseImageRef(b);
  if (!ra.ok() || !rb.ok()) return a == b;
  return ra->String() == rb->String();
}

std::string Revision(const std::string& revision) { return revision.empty() ? "main" : revision; }

std::string StateText(const NodeItem* entry) {
  if (entry == nullptr) return cacheplan::kPending;
  if (entry->state == cacheplan::kPulling) {
    std::string text = StrCat("Pulling ", changeset::FormatBytes(entry->bytes_done));
    if (entry->bytes_total > 0) {
      text += StrCat(" of ", changeset::FormatBytes(entry->bytes_total), " (",
                     entry->bytes_done * 100 / entry->bytes_total, "%)");
    }
    return text;
  }
  if (entry->state == cacheplan::kFailed) return StrCat("Failed: ", entry->message);
  return entry->state;
}

}  // namespace

std::optional<ServedModel> ParseServedModel(const std::vector<std::string>& argv) {
  std::optional<ServedModel> model;
  std::string revision;
  for (size_t i = 0; i < argv.size(); ++i) {
    const size_t at = i;
    if (std::optional<std::string> value = OptionValue(argv, i, "--model")) {
      model = ServedModel{.repo_id = *value, .revision = ""};
      continue;
    }
    i = at;
    if (std::optional<std::string> value = OptionValue(argv, i, "--revision")) {
      revision = *value;
      continue;
    }
    i = at;
    // `vllm serve MODEL`: the word after serve, when it is no option.
    const bool is_vllm = argv[i] == "vllm" || argv[i].ends_with("/vllm");
    if (is_vllm && i + 2 < argv.size() && argv[i + 1] == "serve" && !argv[i + 2].empty() &&
        argv[i + 2][0] != '-' && !model) {
      model = ServedModel{.repo_id = argv[i + 2], .revision = ""};
      i += 2;
    }
  }
  if (!model || model->repo_id.empty()) return std::nullopt;
  const char first = model->repo_id[0];
  if (first == '/' || first == '.' || first == '~') return std::nullopt;
  model->revision = revision;
  CacheItem probe{.name = "model", .type = cacheplan::kHfModel};
  probe.hf_model = cacheplan::HfModelSource{.repo_id = model->repo_id, .revision = revision};
  if (!cacheplan::ValidateItem(probe).ok()) return std::nullopt;
  return model;
}

std::vector<CacheItem> WantedItems(const WantedSources& sources) {
  std::vector<CacheItem> out;
  if (!sources.image.empty()) {
    CacheItem item{.type = cacheplan::kImage};
    item.image = cacheplan::ImageSource{.ref = sources.image};
    out.push_back(item);
  }
  if (!sources.repo_url.empty()) {
    CacheItem item{.type = cacheplan::kGitRepo};
    item.git_repo = cacheplan::GitRepoSource{
        .url = sources.repo_url, .branch = "", .commit = sources.repo_commit};
    out.push_back(item);
  }
  if (sources.model) {
    CacheItem item{.type = cacheplan::kHfModel};
    item.hf_model = cacheplan::HfModelSource{.repo_id = sources.model->repo_id,
                                             .revision = sources.model->revision};
    out.push_back(item);
  }
  for (CacheItem& item : out) item.name = cacheplan::DefaultItemName(item);
  return out;
}

bool SameSource(const CacheItem& existing, const CacheItem& wanted) {
  if (existing.type != wanted.type) return false;
  if (wanted.image && existing.image) return SameImage(existing.image->ref, wanted.image->ref);
  if (wanted.git_repo && existing.git_repo) {
    return existing.git_repo->url == wanted.git_repo->url &&
           existing.git_repo->commit == wanted.git_repo->commit &&
           existing.git_repo->branch == wanted.git_repo->branch;
  }
  if (wanted.hf_model && existing.hf_model) {
    return existing.hf_model->repo_id == wanted.hf_model->repo_id &&
           Revision(existing.hf_model->revision) == Revision(wanted.hf_model->revision) &&
           existing.hf_model->allow_patterns.empty();
  }
  return false;
}

bool AddMissingItems(std::vector<CacheItem>& plan_items, std::vector<CacheItem>& wanted) {
  bool changed = false;
  for (CacheItem& item : wanted) {
    auto same = std::find_if(plan_items.begin(), plan_items.end(),
                             [&](const CacheItem& e) { return SameSource(e, item); });
    if (same != plan_items.end()) {
      item.name = same->name;
      continue;
    }
    const std::string base = item.name;
    auto taken = [&](const std::string& name) {
      return std::any_of(plan_items.begin(), plan_items.end(),
                         [&](const CacheItem& e) { return e.name == name; });
    };
    for (int n = 2; taken(item.name); ++n) {
      // Room for the suffix within a DNS label's 63 characters.
      item.name = StrCat(base.substr(0, 63 - 1 - std::to_string(n).size()), "-", n);
    }
    plan_items.push_back(item);
    changed = true;
  }
  return changed;
}

CacheReadiness AssessCaches(const std::vector<CacheItem>& wanted, const std::string& plan,
                            const std::vector<cacheplan::NodeCacheStatus>& nodes,
                            const std::map<std::string, cacheplan::Labels>& node_labels,
                            const std::string& only_node) {
  CacheReadiness out;
  struct Candidate {
    std::string node;
    size_t ready = 0;
    size_t failed = 0;
    double fraction = 0;  // of the bytes being pulled, for ties
    std::vector<std::string> waiting;
  };
  std::vector<Candidate> candidates;
  std::map<std::string, size_t> applies, failed;  // per item: nodes in scope, failed there
  std::map<std::string, std::string> first_failure;
  for (const cacheplan::NodeCacheStatus& node : nodes) {
    if (!only_node.empty() && node.node_name != only_node) continue;
    Candidate c{.node = node.node_name};
    int64_t done = 0, total = 0;
    auto labels = node_labels.find(node.node_name);
    for (const CacheItem& item : wanted) {
      if (labels != node_labels.end() && !cacheplan::AppliesTo(item, labels->second)) {
        c.waiting.push_back(StrCat(item.name, " not in its scope"));
        continue;
      }
      ++applies[item.name];
      const NodeItem* entry = cacheplan::FindNodeItem(node, plan, item.name);
      if (entry != nullptr && entry->type != item.type) entry = nullptr;  // an old report
      if (entry != nullptr && entry->state == cacheplan::kReady) {
        ++c.ready;
        continue;
      }
      if (entry != nullptr && entry->state == cacheplan::kFailed) {
        ++failed[item.name];
        ++c.failed;
        first_failure.emplace(item.name, StrCat(node.node_name, ": ", entry->message));
      }
      if (entry != nullptr && entry->state == cacheplan::kPulling) {
        done += entry->bytes_done;
        total += entry->bytes_total;
      }
      c.waiting.push_back(StrCat(item.type, " ", item.name, " ", StateText(entry)));
    }
    c.fraction = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0;
    if (c.ready == wanted.size()) out.ready_nodes.push_back(c.node);
    candidates.push_back(std::move(c));
  }
  std::sort(out.ready_nodes.begin(), out.ready_nodes.end());
  out.no_agent = candidates.empty();
  for (const auto& [name, count] : failed) {
    if (count == applies[name]) out.failed_everywhere[name] = first_failure[name];
  }
  if (!out.ready_nodes.empty() || candidates.empty()) return out;
  const Candidate& best = *std::min_element(candidates.begin(), candidates.end(),
                                            [](const Candidate& a, const Candidate& b) {
                                              if (a.ready != b.ready) return a.ready > b.ready;
                                              if (a.fraction != b.fraction)
                                                return a.fraction > b.fraction;
                                              return a.node < b.node;
                                            });
  // The counts first: a line cut to the width (CacheProgressLine) keeps them.
  out.progress = StrCat(best.node, " is warming (", best.ready, " of ", wanted.size(), " ready",
                        best.failed > 0 ? StrCat(", ", best.failed, " failed") : "",
                        "): ", Join(best.waiting, "; "));
  if (candidates.size() > 1) {
    out.progress += StrCat(" - the closest of ", candidates.size(), " nodes");
  }
  return out;
}

std::string CacheProgressLine(const CacheReadiness& readiness, size_t width) {
  constexpr size_t kPrefix = sizeof("k8shazgpu: ") - 1;
  std::string line = StrCat("waiting for the node caches: ", readiness.progress);
  const size_t room = width > kPrefix + 2 ? width - kPrefix : 2;
  if (line.size() > room) line = StrCat(Utf8Prefix(line, room - 1), "…");
  return line;
}

std::vector<std::string> ImageFallbackLines(const std::string& image, const std::string& reason,
                                            const std::string& fallback, size_t width) {
  // A container runtime repeats the reference at every level of its error
  // ("pulling X: failed to pull and unpack image \"X\": failed to resolve
  // reference \"X\": X: not found"); the first line has named it already.
  std::string brief = reason;
  for (size_t at = brief.find(image); !image.empty() && at != std::string::npos;
       at = brief.find(image, at + 2)) {
    brief.replace(at, image.size(), "it");
  }
  constexpr size_t kPrefix = sizeof("k8shazgpu: ") - 1;
  const size_t room = width > kPrefix + 2 + 1 ? width - kPrefix - 2 : 1;
  if (brief.size() > room) brief = StrCat(Utf8Prefix(brief, room - 1), "…");
  // The image on a line of its own: a per-commit reference alone is ~90
  // columns.
  return {"warning: no node can pull the image:", StrCat("  ", image), StrCat("  ", brief),
          StrCat("running ", fallback, " instead; its compiled code may not match the merge-base")};
}

}  // namespace canhazgpu::cli::k8s
