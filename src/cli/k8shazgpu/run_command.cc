#include "cli/k8shazgpu/run_command.h"

#include <chrono>
#include <cstdio>

#include "cli/k8shazgpu/cluster_defaults.h"
#include "cli/k8shazgpu/commands.h"
#include "cli/k8shazgpu/gang_run.h"
#include "cli/k8shazgpu/interrupt.h"
#include "cli/k8shazgpu/log_follow.h"
#include "cli/k8shazgpu/pod_outcome.h"
#include "cli/k8shazgpu/pod_watch.h"
#include "cli/k8shazgpu/progress_line.h"
#include "cli/k8shazgpu/run_objects.h"
#include "cli/k8shazgpu/run_objects_client.h"
#include "cli/k8shazgpu/run_sweep.h"
#include "cli/k8shazgpu/share_report.h"
#include "cli/k8shazgpu/workdir_sync.h"
#include "core/clock.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// How long the first list of pods and events may take.
constexpr milliseconds kSyncTimeout{30'000};
// The why hook reads the whole cluster (seven lists): not more often than
// this, so that it stays well within the client's 5 QPS.
constexpr milliseconds kWhyInterval{3000};

std::string OneLine(const std::string& text) {
  std::string out;
  for (std::string_view line : Split(text, '\n', /*skip_empty=*/true)) {
    if (!out.empty()) out += "; ";
    out += Trim(line);
  }
  return out;
}

std::string Ordinal(int n) {
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return StrCat(n, suffix);
}

std::string Wanted(const RunRequest& r) {
  std::string what = r.wants.mig_profile ? StrCat(r.gpus, " MIG instance", r.gpus == 1 ? "" : "s")
                                         : StrCat(r.gpus, " GPU", r.gpus == 1 ? "" : "s");
  if (!r.wants.empty()) what += StrCat(" (", r.wants.Describe(), ")");
  return what;
}

class Runner {
 public:
  Runner(Context& ctx, const RunRequest& request, const RunHooks& hooks)
      : ctx_(ctx), request_(request), hooks_(hooks) {}

  absl::StatusOr<int> Go();

 private:
  // Deletes the caller's finished runs past their TTL (run_sweep.h); a
  // failure is a warning, never a reason not to run.
  void SweepExpired();
  // When the pod must run by (--wait, --nonblock's placement bound).
  std::chrono::steady_clock::time_point GiveUpAt() const;
  absl::Status GaveUp();
  // The end of a followed run: the container's exit code, said why when
  // the command was not found, and the pod deleted unless --keep.
  int Finished(const PodOutcome& outcome);
  // Before the pod exists (or right after): delete what was made.
  int Abandon() {
    if (objects_) objects_->Delete();
    std::fprintf(stderr, "k8shazgpu: interrupted; deleted what this run created\n");
    return InterruptGuard::ExitCode();
  }
  // Ctrl-C once the pod exists: detach or delete; the exit code. A
  // reservation that is not running yet holds nothing worth keeping.
  int Interrupted() {
    progress_->Clear();
    if (!request_.reservation && ctx_.stdin_tty && ctx_.stderr_tty &&
        AskDetach("the pod runs on")) {
      std::fputs(FollowHints(ctx_, objects_->names().pod, request_).c_str(), stderr);
      return 0;
    }
    objects_->Delete();
    std::fprintf(stderr, "k8shazgpu: interrupted; deleted pod %s and its claim\n",
                 objects_->names().pod.c_str());
    return InterruptGuard::ExitCode();
  }
  absl::StatusOr<int> Follow();
  // --gpu-mem: which share of which GPU the pod got, and its isolation.
  void SayShares(const json& pod) {
    if (!request_.gpu_mem) return;
    for (const std::string& line : FetchShareLines(*ctx_.client, ctx_.namespace_name, pod)) {
      std::fprintf(stderr, "k8shazgpu: %s\n", line.c_str());
    }
  }
  // Copies the main container's log of the started pod to stdout until it
  // ends; returns early when interrupted.
  void CopyLogs(const json& started, const std::atomic<bool>* cancel);
  // Waits for the pod to finish and returns its exit code.
  absl::StatusOr<int> AwaitExit(const std::atomic<bool>* cancel);
  // A reservation's pod runs: where, which devices, how to get a shell.
  absl::StatusOr<int> Reserved(const json& pod);
  // The pending or scheduled line for `pod`.
  std::string PendingLine(const json& pod, PodStage stage);

  Context& ctx_;
  const RunRequest& request_;
  const RunHooks& hooks_;
  std::optional<RunObjectsClient> objects_;
  std::unique_ptr<PodWatch> watch_;
  std::unique_ptr<ProgressLine> progress_;
  std::string why_;
  std::chrono::steady_clock::time_point why_asked_{};
  std::string why_for_version_;
};

absl::StatusOr<int> Runner::Go() {
  const auto started = RealClock().MonoNow();
  RETURN_IF_ERROR(ctx_.Connect());
  kube::Client& client = *ctx_.client;
  const std::string& ns = ctx_.namespace_name;
  SweepExpired();

  ASSIGN_OR_RETURN(json classes, client.ListAll(kube::kDeviceClasses, ""));
  ASSIGN_OR_RETURN(ClassChoice klass, ChooseClass(classes["items"], request_));
  if (!request_.node.empty()) {
    absl::StatusOr<json> node = client.Get(kube::kNodes, "", request_.node);
    if (kube::IsApiNotFound(node.status())) {
      return absl::InvalidArgumentError(StrCat("node '", request_.node, "' does not exist"));
    }
    // Not allowed to read nodes: the scheduler will tell.
  }
  ASSIGN_OR_RETURN(json claim_spec, ClaimSpec(request_, klass));
  RETURN_IF_ERROR(hooks_.check_claim(client, ns, claim_spec, request_));

  const RunNames names = MakeRunNames(request_, ctx_.user, NewRunId());
  PodPlan plan;
  if (hooks_.build_pod) {
    ASSIGN_OR_RETURN(plan, hooks_.build_pod(names));
  } else {
    plan.pod = PodObject(request_, names);
  }
  objects_.emplace(ctx_, names, request_.share, request_.share_with);
  if (InterruptGuard::Interrupted()) return Abandon();
  if (absl::Status s = objects_->CreateClaim(claim_spec); !s.ok()) {
    objects_->Delete();
    return s;
  }
  if (absl::Status s = objects_->CreateConfigMaps(plan.config_maps); !s.ok()) {
    objects_->Delete();
    return s;
  }
  if (InterruptGuard::Interrupted()) return Abandon();
  absl::StatusOr<json> pod = objects_->CreatePod(plan.pod);
  if (!pod.ok()) {
    objects_->Delete();
    return pod.status();
  }
  if (ctx_.getenv("K8SHAZGPU_TIMING")) {
    std::fprintf(
        stderr, "k8shazgpu: timing: pod created after %lld ms\n",
        static_cast<long long>(
            std::chrono::duration_cast<milliseconds>(RealClock().MonoNow() - started).count()));
  }
  if (InterruptGuard::Interrupted()) return Abandon();
  if (absl::Status s = objects_->Adopt(); !s.ok()) {
    // Not fatal: the claim keeps its run label for cleanup.
    std::fprintf(stderr, "k8shazgpu: warning: %s\n",
                 std::string(Explain(s, ctx_).message()).c_str());
  }
  std::fprintf(stderr, "k8shazgpu: pod %s created in namespace %s (run %s, class %s%s)\n",
               names.pod.c_str(), ns.c_str(), names.run_id.c_str(), klass.name.c_str(),
               request_.image_origin.empty()
                   ? ""
                   : StrCat(", image ", request_.image, " from ", request_.image_origin).c_str());
  std::fputs(plan.created_note.c_str(), stderr);
  return Follow();
}

std::string Runner::PendingLine(const json& pod, PodStage stage) {
  if (stage == PodStage::kScheduled) {
    const std::string error = watch_->PrepareError();
    return StrCat("scheduled on ", pod.value("/spec/nodeName"_json_pointer, std::string()),
                  "; preparing its GPUs", error.empty() ? "" : ": " + OneLine(error));
  }
  // The why hook may read the whole cluster: at most every kWhyInterval,
  // and again when the pod changed.
  const auto now = RealClock().MonoNow();
  const std::string version = pod.value("/metadata/resourceVersion"_json_pointer, std::string());
  if (version != why_for_version_ || now - why_asked_ >= kWhyInterval) {
    why_ = OneLine(hooks_.why_pending(*ctx_.client, pod));
    why_asked_ = now;
    why_for_version_ = version;
  }
  const QueuePlace place = watch_->Place();
  std::string line = StrCat("waiting for ", Wanted(request_));
  if (place.position > 0)
    line += StrCat(", ", Ordinal(place.position), " of ", place.of, " in line");
  if (!why_.empty()) line += StrCat(": ", why_);
  return line;
}

absl::StatusOr<int> Runner::Follow() {
  kube::Client& client = *ctx_.client;
  const std::string& ns = ctx_.namespace_name;
  const std::string pod_name = objects_->names().pod;
  // The line is the cluster's when we may list every namespace's pods.
  const bool all_namespaces =
      client.List(kube::kPods, "", {.label_selector = kRunLabel, .limit = 1}).ok();
  watch_ = std::make_unique<PodWatch>(client, ns, pod_name, all_namespaces);
  progress_ = std::make_unique<ProgressLine>(ctx_.stderr_tty);
  if (absl::Status s = watch_->Start(kSyncTimeout); !s.ok()) {
    if (InterruptGuard::Interrupted()) return Interrupted();
    // The pod exists and will run: say how to find it.
    return absl::Status(s.code(), StrCat(Explain(s, ctx_).message(), "; pod ", pod_name,
                                         " runs on: kubectl logs -f -n ", ns, " pod/", pod_name));
  }
  const std::atomic<bool>* cancel = &InterruptGuard::Flag();
  PodStage stage = PodStage::kPending;
  const auto give_up = GiveUpAt();
  while (true) {
    if (InterruptGuard::Interrupted()) return Interrupted();
    if (stage == PodStage::kPending && RealClock().MonoNow() >= give_up) return GaveUp();
    if (watch_->Deleted()) {
      return absl::AbortedError(StrCat("pod ", pod_name, " was deleted before it ended"));
    }
    std::optional<json> pod = watch_->Pod();
    if (pod) {
      stage = StageOf(*pod);
      if (request_.detach && stage != PodStage::kPending) {
        progress_->Clear();
        SayShares(*pod);
        std::printf("pod %s is on node %s\n%s", pod_name.c_str(),
                    pod->value("/spec/nodeName"_json_pointer, std::string()).c_str(),
                    FollowHints(ctx_, pod_name, request_).c_str());
        return 0;
      }
      if (request_.reservation && stage == PodStage::kRunning) return Reserved(*pod);
      if (request_.reservation && stage == PodStage::kFinished) {
        progress_->Clear();
        const PodOutcome outcome = OutcomeOf(*pod, watch_->PrepareError());
        objects_->Delete();
        return absl::AbortedError(StrCat("reservation pod ", pod_name, " ended before it ran",
                                         outcome.message.empty() ? "" : ": " + outcome.message,
                                         "; deleted it"));
      }
      if (stage == PodStage::kRunning || stage == PodStage::kFinished) break;
      progress_->Show(PendingLine(*pod, stage));
    }
    watch_->WaitForChange(kWhyInterval, cancel);
  }
  progress_->Clear();
  const json started = *watch_->Pod();
  SayShares(started);
  if (request_.port && stage == PodStage::kRunning) {
    std::fprintf(stderr, "k8shazgpu: reach port %d with: kubectl port-forward -n %s pod/%s %d:%d\n",
                 *request_.port, ns.c_str(), pod_name.c_str(), *request_.port, *request_.port);
  }
  CopyLogs(started, cancel);
  return AwaitExit(cancel);
}

void Runner::CopyLogs(const json& started, const std::atomic<bool>* cancel) {
  // A container that started has a log, even when it has ended already.
  if (!MainContainerStatus(started).is_object()) return;
  FollowOptions options{.container = kContainerName,
                        .cancel = cancel,
                        .ended =
                            [&] {
                              for (int i = 0; i < 10; ++i) {
                                std::optional<json> p = watch_->Pod();
                                if (!p || StageOf(*p) == PodStage::kFinished) return true;
                                if (InterruptGuard::Interrupted()) return true;
                                watch_->WaitForChange(milliseconds(200), cancel);
                              }
                              return false;
                            },
                        .max_reconnects = 50};
  absl::Status logs = FollowLogs(*ctx_.client, ctx_.namespace_name, objects_->names().pod, options,
                                 [](std::string_view text) {
                                   std::fwrite(text.data(), 1, text.size(), stdout);
                                   std::fflush(stdout);
                                 });
  if (InterruptGuard::Interrupted()) return;
  if (!logs.ok()) {
    std::fprintf(stderr, "k8shazgpu: warning: %s\n",
                 std::string(Explain(logs, ctx_).message()).c_str());
  }
}

absl::StatusOr<int> Runner::AwaitExit(const std::atomic<bool>* cancel) {
  // The log ends with the container; its status follows.
  while (true) {
    if (InterruptGuard::Interrupted()) return Interrupted();
    std::optional<json> pod = watch_->Pod();
    if (!pod) {
      return absl::AbortedError(
          StrCat("pod ", objects_->names().pod, " was deleted before it ended"));
    }
    if (StageOf(*pod) == PodStage::kFinished) {
      return Finished(OutcomeOf(*pod, watch_->PrepareError()));
    }
    watch_->WaitForChange(milliseconds(1000), cancel);
  }
}

void Runner::SweepExpired() {
  absl::StatusOr<std::vector<std::string>> swept =
      SweepExpiredRuns(*ctx_.client, ctx_.namespace_name, ctx_.user, ctx_.clock->Now());
  if (!swept.ok()) {
    std::fprintf(stderr, "k8shazgpu: warning: finished runs were not swept: %s\n",
                 std::string(Explain(swept.status(), ctx_).message()).c_str());
  } else if (!swept->empty()) {
    std::fprintf(stderr, "k8shazgpu: deleted %zu finished run(s) past their --ttl: %s\n",
                 swept->size(), Join(*swept, ", ").c_str());
  }
}

std::chrono::steady_clock::time_point Runner::GiveUpAt() const {
  const std::optional<int64_t> bound =
      request_.nonblock ? std::optional<int64_t>(kNonblockPlacementSeconds) : request_.wait_seconds;
  return bound ? RealClock().MonoNow() + std::chrono::seconds(*bound)
               : std::chrono::steady_clock::time_point::max();
}

absl::Status Runner::GaveUp() {
  progress_->Clear();
  objects_->Delete();
  const std::string& pod_name = objects_->names().pod;
  // Exit 3, as canhazgpu's: the GPUs are not available now.
  if (request_.nonblock) {
    return absl::ResourceExhaustedError(
        StrCat("pod ", pod_name, " was not placed within ", kNonblockPlacementSeconds,
               "s (--nonblock: the devices were free when checked; another run took them "
               "first); deleted it and its claim"));
  }
  return absl::ResourceExhaustedError(
      StrCat("pod ", pod_name, " did not run within ",
             FormatDurationShort(std::chrono::seconds(*request_.wait_seconds)),
             "; deleted it and its claim (a longer --wait waits longer in line)"));
}

int Runner::Finished(const PodOutcome& outcome) {
  if (!outcome.message.empty()) {
    std::fprintf(stderr, "k8shazgpu: %s\n", outcome.message.c_str());
  }
  // The shell's "command not found": the image is the likely cause.
  if (outcome.exit_code == 127) {
    std::fprintf(
        stderr, "k8shazgpu: exit 127 is \"command not found\": is it in image %s%s?\n",
        request_.image.c_str(),
        request_.image_origin.empty() ? "" : StrCat(" (", request_.image_origin, ")").c_str());
    std::fprintf(stderr, "k8shazgpu: name one that has it with --image or K8SHAZGPU_IMAGE%s\n",
                 request_.image_origin == kBuiltInImageOrigin
                     ? StrCat("; the cluster's default is set in configmap ", kDefaultsNamespace,
                              "/", kDefaultsConfigMap)
                           .c_str()
                     : "");
  }
  // The output has been read: nothing is left to look at but the status.
  if (!request_.keep) objects_->Delete();
  return outcome.exit_code;
}

absl::StatusOr<int> Runner::Reserved(const json& pod) {
  progress_->Clear();
  SayShares(pod);
  const std::string& ns = ctx_.namespace_name;
  const std::string pod_name = objects_->names().pod;
  // The devices, from the allocation of the claim made from the template.
  std::vector<std::string> devices;
  for (const json& s : pod.value("/status/resourceClaimStatuses"_json_pointer, json::array())) {
    absl::StatusOr<json> claim =
        ctx_.client->Get(kube::kResourceClaims, ns, s.value("resourceClaimName", ""));
    if (!claim.ok()) continue;
    for (const json& r :
         claim->value("/status/allocation/devices/results"_json_pointer, json::array())) {
      devices.push_back(r.value("device", ""));
    }
  }
  if (request_.short_output) {
    // For scripts: the devices alone, as canhazgpu reserve --short prints ids.
    std::printf("%s\n", Join(devices, ",").c_str());
    return 0;
  }
  std::printf("reserved %s on node %s", devices.empty() ? "?" : Join(devices, ", ").c_str(),
              pod.value("/spec/nodeName"_json_pointer, std::string()).c_str());
  if (request_.timeout_seconds) {
    std::printf(" for %s",
                FormatDurationShort(std::chrono::seconds(*request_.timeout_seconds)).c_str());
  }
  std::printf(
      " (pod %s)\n  shell:   kubectl exec -it -n %s pod/%s -- sh\n"
      "  release: k8shazgpu release -n %s %s\n",
      pod_name.c_str(), ns.c_str(), pod_name.c_str(), ns.c_str(), pod_name.c_str());
  return 0;
}

}  // namespace

std::string FollowHints(const Context& ctx, const std::string& pod, const RunRequest& request) {
  const std::string& ns = ctx.namespace_name;
  std::string out = StrCat("  follow:   kubectl logs -f -n ", ns, " pod/", pod, "\n");
  if (request.port) {
    out += StrCat("  reach:    kubectl port-forward -n ", ns, " pod/", pod, " ", *request.port, ":",
                  *request.port, "\n");
  }
  out += StrCat("  clean up: k8shazgpu cleanup -n ", ns, " --name ", pod, "\n");
  return out;
}

absl::StatusOr<int> Run(Context& ctx, const RunRequest& request, const RunHooks& hooks) {
  InterruptGuard guard;
  Runner runner(ctx, request, hooks);
  absl::StatusOr<int> code = runner.Go();
  if (!code.ok() && InterruptGuard::Interrupted()) {
    std::fprintf(stderr, "k8shazgpu: %s\n",
                 std::string(Explain(code.status(), ctx).message()).c_str());
    return InterruptGuard::ExitCode();
  }
  return code;
}

int RunCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, RunCommandFlags(), "run",
                        [](Context& c, const ParsedFlags& flags) -> absl::StatusOr<int> {
                          ASSIGN_OR_RETURN(RunRequest request,
                                           ParseRunRequest(flags, {.image = kDefaultRunImage,
                                                                   .port = std::nullopt,
                                                                   .shared_memory = false}));
                          RETURN_IF_ERROR(ApplyClusterDefaults(c, flags, request));
                          RunHooks hooks = DefaultRunHooks(*c.clock);
                          // The working directory goes with the command (workdir_sync.h).
                          RETURN_IF_ERROR(ShipWorkdir(c, flags, request, hooks));
                          // Many nodes, one line: all ranks or none (gang_run.h).
                          if (request.nodes > 0) return RunGang(c, request, hooks);
                          return Run(c, request, hooks);
                        });
}

}  // namespace canhazgpu::cli::k8s
