#include "cli/k8shazgpu/vllm_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "cacheplan/types.h"
#include "changeset/bundle.h"
#include "changeset/change_set.h"
#include "changeset/vllm_checkout.h"
#include "cli/k8shazgpu/cache_client.h"
#include "cli/k8shazgpu/interrupt.h"
#include "cli/k8shazgpu/progress_line.h"
#include "cli/k8shazgpu/run_command.h"
#include "cli/k8shazgpu/run_request.h"
#include "cli/k8shazgpu/vllm_caches.h"
#include "cli/k8shazgpu/vllm_pod.h"
#include "cli/k8shazgpu/vllm_share.h"
#include "core/clock.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

namespace cs = ::canhazgpu::changeset;
using cacheplan::CacheItem;
using nlohmann::json;

// How often the nodes' reports are read while the caches warm: the
// reports themselves change at most once a second (the agent debounces).
constexpr std::chrono::milliseconds kCachePoll{1000};

void Note(const std::string& line) { std::fprintf(stderr, "k8shazgpu: %s\n", line.c_str()); }

// The developer's checkout and its change set, packaged.
struct Changes {
  cs::VllmCheckout checkout;
  std::vector<std::string> parts;
  std::vector<std::string> compiled_paths;
};

absl::StatusOr<std::optional<Changes>> PackageChanges(const ParsedFlags& flags) {
  const bool wants_checkout = flags.Has("fetch") || flags.Has("rebuild");
  if (flags.Has("no-checkout")) {
    if (wants_checkout) {
      return absl::InvalidArgumentError("--no-checkout runs no checkout; drop --fetch/--rebuild");
    }
    return std::nullopt;
  }
  if (!cs::IsInsideVllmCheckout(".")) {
    if (wants_checkout) {
      return absl::FailedPreconditionError(
          "--fetch and --rebuild need a vLLM checkout; run this from inside one");
    }
    return std::nullopt;
  }
  Changes out;
  ASSIGN_OR_RETURN(out.checkout, cs::DetectVllmCheckout(".", flags.Has("fetch")));
  ASSIGN_OR_RETURN(cs::ChangeSet change_set,
                   cs::CollectChangeSet(out.checkout.top_level, out.checkout.merge_base));
  const std::string bundle = cs::Encode(change_set);
  if (absl::Status size = cs::CheckBundleSize(bundle.size(), change_set); !size.ok()) {
    return absl::FailedPreconditionError(size.message());
  }
  out.parts = cs::SplitIntoParts(bundle, cs::kConfigMapPartSize);
  out.compiled_paths = cs::TouchesCompiledCode(change_set);
  const cs::Summary summary = cs::Summarize(change_set);
  Note(StrCat("vLLM checkout ", out.checkout.top_level.string(), ": merge-base ",
              out.checkout.merge_base.substr(0, 12), " with ", out.checkout.remote_name, "; ",
              summary.added, " added, ", summary.modified, " modified, ", summary.deleted,
              " deleted (", cs::FormatBytes(bundle.size()), " packed)"));
  return out;
}

// What the wait for the caches decided.
struct CacheOutcome {
  bool used = false;               // some node runs the cache agent: mount its cache
  std::vector<std::string> nodes;  // where everything wanted is Ready
  std::string image;               // the image to run (the fallback, maybe)
  bool model_ready = false;
};

class CacheWaiter {
 public:
  CacheWaiter(Context& ctx, std::string plan, std::string only_node, bool required)
      : ctx_(ctx), plan_(std::move(plan)), only_node_(std::move(only_node)), required_(required) {}

  // Adds what `sources` asks for to the plan, then waits for a node with
  // all of it. `fallback_image`: what runs instead when no node can pull
  // the wanted image ("" to insist on it).
  absl::StatusOr<CacheOutcome> Wait(const WantedSources& sources,
                                    const std::string& fallback_image);

 private:
  absl::Status AddToPlan(std::vector<CacheItem>& wanted);

  Context& ctx_;
  const std::string plan_;
  const std::string only_node_;
  const bool required_;
};

absl::Status CacheWaiter::AddToPlan(std::vector<CacheItem>& wanted) {
  ASSIGN_OR_RETURN(std::optional<json> read, ReadPlan(ctx_, plan_));
  std::vector<CacheItem> items;
  if (read)
    items = cacheplan::ItemsFromJson(read->value("/spec/items"_json_pointer, json::array()));
  std::vector<CacheItem> named = wanted;
  if (!AddMissingItems(items, named)) {
    wanted = named;
    return absl::OkStatus();
  }
  // The edit runs again on a fresh read after a conflict.
  std::vector<std::string> added;
  RETURN_IF_ERROR(EditPlan(ctx_, plan_, [&](std::vector<CacheItem>& plan_items) {
    const size_t before = plan_items.size();
    named = wanted;
    AddMissingItems(plan_items, named);
    added.clear();
    for (size_t i = before; i < plan_items.size(); ++i) {
      added.push_back(StrCat(plan_items[i].type, " ", plan_items[i].name));
    }
    return absl::OkStatus();
  }));
  wanted = named;
  Note(StrCat("added ", Join(added, ", "), " to cache plan ", plan_));
  return absl::OkStatus();
}

absl::StatusOr<CacheOutcome> CacheWaiter::Wait(const WantedSources& sources,
                                               const std::string& fallback_image) {
  CacheOutcome out{.image = sources.image};
  std::vector<CacheItem> wanted = WantedItems(sources);
  RETURN_IF_ERROR(AddToPlan(wanted));
  const std::map<std::string, cacheplan::Labels> labels = NodeLabels(ctx_);
  ProgressLine progress(ctx_.stderr_tty);
  bool waited = false;
  while (true) {
    ASSIGN_OR_RETURN(std::vector<cacheplan::NodeCacheStatus> reports, ListNodeCacheStatuses(ctx_));
    const CacheReadiness readiness = AssessCaches(wanted, plan_, reports, labels, only_node_);
    if (readiness.no_agent) {
      const std::string where = only_node_.empty() ? "no node" : "node " + only_node_ + " does not";
      if (required_) {
        return absl::FailedPreconditionError(
            StrCat(where, " run", only_node_.empty() ? "s" : "",
                   " the k8shazgpu cache agent (no NodeCacheStatus), and the checkout's changes "
                   "are applied from the node's git mirror; turn the cache on in k8shazgpu-node "
                   "(docs/caches.md), or pass --no-checkout to run the image's vLLM"));
      }
      Note(StrCat("warning: ", where, " run", only_node_.empty() ? "s" : "",
                  " the cache agent; the pod downloads what it needs itself"));
      return out;
    }
    out.used = true;
    // An image no node can pull: the default instead, said loudly.
    const CacheItem* image =
        wanted.empty() || wanted[0].type != cacheplan::kImage ? nullptr : &wanted[0];
    if (image != nullptr && readiness.failed_everywhere.contains(image->name) &&
        !fallback_image.empty() && fallback_image != out.image) {
      progress.Clear();
      for (const std::string& line : ImageFallbackLines(
               out.image, readiness.failed_everywhere.at(image->name), fallback_image)) {
        Note(line);
      }
      out.image = fallback_image;
      wanted.erase(wanted.begin());
      continue;
    }
    if (!readiness.failed_everywhere.empty()) {
      progress.Clear();
      const auto& [name, message] = *readiness.failed_everywhere.begin();
      return absl::FailedPreconditionError(
          StrCat("cache item ", name, " failed on every node (", message,
                 "); fix its source or credentials, then 'k8shazgpu cache update ", name, "'"));
    }
    if (!readiness.ready_nodes.empty()) {
      progress.Clear();
      out.nodes = readiness.ready_nodes;
      out.model_ready = sources.model.has_value();
      if (waited) Note(StrCat("caches ready on ", Join(out.nodes, ", ")));
      return out;
    }
    waited = true;
    progress.Show(CacheProgressLine(readiness));
    const auto until = RealClock().MonoNow() + kCachePoll;
    while (RealClock().MonoNow() < until) {
      if (InterruptGuard::Interrupted()) {
        progress.Clear();
        return absl::CancelledError(
            "interrupted while the caches warmed; nothing was created (the cache plan keeps "
            "its new items)");
      }
      RealClock().SleepFor(std::chrono::milliseconds(50));
    }
  }
}

// --gpu-mem: vLLM plans its memory as a fraction of the whole device;
// unless the user gave one, it gets its share's (vllm_share.h).
absl::Status LimitToShare(Context& ctx, RunRequest& request) {
  if (GivesGpuMemoryUtilization(request.argv)) return absl::OkStatus();
  RETURN_IF_ERROR(ctx.Connect());
  std::vector<json> slices;
  if (absl::StatusOr<json> list = ctx.client->ListAll(kube::kResourceSlices, "", {}); list.ok()) {
    if (list->contains("items") && (*list)["items"].is_array())
      slices = (*list)["items"].get<std::vector<json>>();
  }
  const std::optional<double> fraction = ShareUtilization(*request.gpu_mem, slices);
  if (!fraction) {
    Note(
        "no GPU in the cluster is shared by memory: vLLM keeps its own "
        "--gpu-memory-utilization on the whole GPU it gets");
    return absl::OkStatus();
  }
  const std::string value = FormatUtilization(*fraction);
  request.argv.push_back("--gpu-memory-utilization");
  request.argv.push_back(value);
  Note(StrCat("--gpu-memory-utilization ", value,
              " added: vLLM sizes its cache from the whole GPU, and this run has a share of it"));
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> VllmRunFlags() {
  std::vector<FlagSpec> flags = RunFlags();
  // One vLLM server per run: its multi-node form (data-parallel ranks)
  // needs its own launch, not --nodes' torchrun variables.
  for (const FlagSpec& gang : GangFlags()) {
    flags.erase(std::remove_if(flags.begin(), flags.end(),
                               [&](const FlagSpec& f) { return f.name == gang.name; }),
                flags.end());
  }
  flags.push_back({.name = "fetch",
                   .help = "fetch the checkout's upstream remote before finding the merge-base"});
  flags.push_back({.name = "rebuild",
                   .help = "build vLLM from the checkout in the pod (for compiled-code changes)"});
  flags.push_back({.name = "no-checkout",
                   .help = "run the image's vLLM, without this directory's checkout and changes"});
  return flags;
}

absl::StatusOr<int> VllmRun(Context& ctx, const ParsedFlags& flags) {
  const std::string default_image = ctx.Env("K8SHAZGPU_VLLM_IMAGE", kDefaultVllmImage);
  ASSIGN_OR_RETURN(
      RunRequest request,
      ParseRunRequest(flags, {.image = default_image, .port = kVllmPort, .shared_memory = true}));
  VllmPodSettings settings;
  settings.node_image = ctx.Env("K8SHAZGPU_NODE_IMAGE", settings.node_image);
  settings.vllm_image_template =
      ctx.Env("K8SHAZGPU_VLLM_IMAGE_TEMPLATE", settings.vllm_image_template);
  settings.cache_root = ctx.Env("K8SHAZGPU_CACHE_ROOT", settings.cache_root);
  settings.rebuild = flags.Has("rebuild");
  ASSIGN_OR_RETURN(std::optional<Changes> changes, PackageChanges(flags));

  WantedSources sources{.image = request.image, .model = ParseServedModel(request.argv)};
  // --image is the user's choice: no template, no fallback.
  const bool image_chosen = flags.Has("image");
  if (changes) {
    if (!image_chosen) {
      sources.image = VllmImageFor(settings.vllm_image_template, changes->checkout.merge_base);
    }
    sources.repo_url = changes->checkout.remote_url;
    sources.repo_commit = changes->checkout.merge_base;
  }
  if (request.gpu_mem) RETURN_IF_ERROR(LimitToShare(ctx, request));
  RunHooks hooks = DefaultRunHooks(*ctx.clock);
  hooks.build_pod = [&](const RunNames& names) -> absl::StatusOr<PodPlan> {
    CacheWaiter waiter(ctx, ctx.Env("K8SHAZGPU_CACHE_PLAN", cacheplan::kDefaultPlan), request.node,
                       /*required=*/changes.has_value());
    ASSIGN_OR_RETURN(CacheOutcome caches, waiter.Wait(sources, image_chosen ? "" : default_image));
    settings.hf_offline = caches.model_ready;
    PodPlan plan;
    if (changes) {
      VllmPodObjects objects = BuildVllmPodObjects(
          request, names, changes->checkout, changes->parts, changes->compiled_paths, settings);
      if (!objects.warning.empty()) Note(objects.warning);
      plan.pod = std::move(objects.pod);
      plan.config_maps = std::move(objects.config_maps);
    } else {
      plan.pod = PodObject(request, names);
      if (caches.used) UseNodeCache(plan.pod, settings);
    }
    plan.pod["spec"]["containers"][0]["image"] = caches.image;
    if (!caches.nodes.empty()) PinToNodes(plan.pod, caches.nodes);
    return plan;
  };
  return Run(ctx, request, hooks);
}

}  // namespace canhazgpu::cli::k8s
