#include "cli/k8shazgpu/gang_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "cli/common/exit_code.h"
#include "cli/k8shazgpu/cluster_read.h"
#include "cli/k8shazgpu/gang_logs.h"
#include "cli/k8shazgpu/gang_objects.h"
#include "cli/k8shazgpu/gang_objects_client.h"
#include "cli/k8shazgpu/gang_ranks.h"
#include "cli/k8shazgpu/interrupt.h"
#include "cli/k8shazgpu/pod_outcome.h"
#include "cli/k8shazgpu/progress_line.h"
#include "cli/k8shazgpu/run_command.h"
#include "cli/k8shazgpu/run_objects.h"
#include "clusterview/gang_placement.h"
#include "core/clock.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

// How often the ranks are read while the run waits or runs, and the whole
// cluster for the fit check (seven lists: well within the client's QPS).
constexpr milliseconds kPoll{500};
constexpr milliseconds kFitInterval{2000};

const kube::ResourceRef kLocalQueues{"kueue.x-k8s.io", "v1beta1", "localqueues", true};

// Who admits a gang (ADR 0019), in this order: Kueue when --queue names a
// queue, the cluster's own gang scheduling when the server serves
// PodGroups, else k8shazgpu itself through scheduling gates.
enum class Admission { kOwn, kKueue, kCluster };

std::string GangWanted(const RunRequest& r) {
  return StrCat(r.nodes, " × ", r.gpus, r.wants.mig_profile ? " MIG instance" : " GPU",
                r.gpus == 1 ? "" : "s");
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// How long to wait before reading again: 20 ms at first, doubling up to
// kPoll, so that the steps of a start that takes a few hundred
// milliseconds are seen as they happen, and a long wait or run costs the
// API server two reads a second.
class Pace {
 public:
  milliseconds Next() {
    const milliseconds d = next_;
    next_ = std::min(next_ * 2, kPoll);
    return d;
  }
  void Reset() { next_ = kFirst; }

 private:
  static constexpr milliseconds kFirst{20};
  milliseconds next_ = kFirst;
};

// Sleeps `d` unless interrupted first.
void Pause(milliseconds d) {
  const auto until = RealClock().MonoNow() + d;
  while (RealClock().MonoNow() < until && !InterruptGuard::Interrupted())
    RealClock().SleepFor(std::min(d, milliseconds(50)));
}

// How many of `ranks` the scheduler has bound to a node.
int CountBound(const std::vector<json>& ranks) {
  return static_cast<int>(std::count_if(ranks.begin(), ranks.end(), [](const json& p) {
    return !kube::StringAt(p, "/spec/nodeName"_json_pointer).empty();
  }));
}

// Whether the Job failed for `reason` (its Failed condition).
bool JobFailedBy(const json& job, const std::string& reason) {
  for (const json& c : job.value("/status/conditions"_json_pointer, json::array())) {
    if (kube::StringField(c, "type") == "Failed" && kube::StringField(c, "status") == "True" &&
        kube::StringField(c, "reason") == reason)
      return true;
  }
  return false;
}

// Whether the Job has ended (Complete or Failed): a rank may have run and
// failed before the others were even placed.
bool JobEnded(const json& job) {
  for (const json& c : job.value("/status/conditions"_json_pointer, json::array())) {
    const std::string type = kube::StringField(c, "type");
    if ((type == "Failed" || type == "Complete") && kube::StringField(c, "status") == "True")
      return true;
  }
  return false;
}

// "Failed: BackoffLimitExceeded: ...": the Job's ending condition.
std::string JobEndReason(const json& job) {
  for (const json& c : job.value("/status/conditions"_json_pointer, json::array())) {
    const std::string type = kube::StringField(c, "type");
    if ((type == "Failed" || type == "Complete") && kube::StringField(c, "status") == "True")
      return StrCat(type, ": ", kube::StringField(c, "reason"), ": ",
                    kube::StringField(c, "message"));
  }
  return "";
}

class GangRunner {
 public:
  GangRunner(Context& ctx, const RunRequest& request, const RunHooks& hooks)
      : ctx_(ctx), request_(request), hooks_(hooks), progress_(ctx.stderr_tty) {}

  absl::StatusOr<int> Go();

 private:
  // Before anything is created: whether the gang could ever fit the
  // cluster (FailedPrecondition when not), and with --nonblock whether it
  // fits now (ResourceExhausted when not).
  absl::Status CheckFit(const json& claim_spec, const RunNames& names, const PodPlan& plan);
  absl::Status CreateObjects(const json& claim_spec, const PodPlan& plan);
  absl::StatusOr<std::vector<json>> Ranks();
  // Waits until every rank is bound to a node; false when it gave up
  // (--wait, --nonblock) or was interrupted.
  absl::StatusOr<bool> AdmitOurselves();
  // Kueue or the cluster's gang scheduler admits: waits until every rank
  // is bound (or the Job ended), saying why not yet.
  absl::StatusOr<bool> AwaitAdmission();
  // The PodGroup version the server serves (v1beta1, else 1.36's
  // v1alpha2), or nullopt: the cluster has no gang scheduling of its own.
  std::optional<kube::ResourceRef> ServedPodGroups();
  // After the gates are released: true once every rank is bound, false
  // when the scheduler did not bind them all within kGangBindSeconds.
  absl::StatusOr<bool> AwaitBound();
  // Suspends the Job until its pods are gone, then resumes it: the ranks
  // come back behind their gates, holding nothing.
  absl::Status GiveBack();
  std::string WhyNotYet(const std::vector<json>& ranks);
  bool PastGiveUp() const;
  absl::StatusOr<int> Follow();
  // reserve --nodes: every rank's placeholder runs; where, which devices.
  absl::StatusOr<int> Reserved();
  // Ctrl-C: deletes every rank; once the ranks run (`running`), a person
  // at a terminal may detach instead, as a one-pod run offers.
  int Interrupted(bool running = false);
  // How to follow and clean up a run left running.
  std::string DetachHints() const;
  absl::Status GaveUp();

  Context& ctx_;
  const RunRequest& request_;
  const RunHooks& hooks_;
  ProgressLine progress_;
  std::unique_ptr<GangObjectsClient> objects_;
  steady_clock::time_point give_up_ = steady_clock::time_point::max();
  steady_clock::time_point fit_checked_{};
  std::string why_;
  std::string admitted_by_;
  Admission admission_ = Admission::kOwn;
  Pace pace_;                     // reset as each wait begins
  bool blind_said_ = false;       // told that the cluster cannot be read
  kube::ResourceRef pod_groups_;  // with Admission::kCluster
};

absl::StatusOr<int> GangRunner::Go() {
  RETURN_IF_ERROR(ctx_.Connect());
  kube::Client& client = *ctx_.client;
  ASSIGN_OR_RETURN(json classes, client.ListAll(kube::kDeviceClasses, ""));
  ASSIGN_OR_RETURN(ClassChoice klass, ChooseClass(classes["items"], request_));
  ASSIGN_OR_RETURN(json claim_spec, ClaimSpec(request_, klass));
  // Whether one rank could ever be had; --nonblock's "now" is the gang's fit, below.
  RunRequest one_rank = request_;
  one_rank.nonblock = false;
  RETURN_IF_ERROR(hooks_.check_claim(client, ctx_.namespace_name, claim_spec, one_rank));
  if (request_.kueue_queue.empty()) {
    if (std::optional<kube::ResourceRef> groups = ServedPodGroups()) {
      admission_ = Admission::kCluster;
      pod_groups_ = *groups;
    }
  } else {
    admission_ = Admission::kKueue;
    absl::StatusOr<json> queue =
        client.Get(kLocalQueues, ctx_.namespace_name, request_.kueue_queue);
    if (!queue.ok()) {
      return absl::FailedPreconditionError(StrCat(
          "--queue ", request_.kueue_queue, ": no Kueue LocalQueue of that name in namespace ",
          ctx_.namespace_name, " (", Explain(queue.status(), ctx_).message(),
          "); without --queue the run is admitted all at once by k8shazgpu itself"));
    }
  }
  if (request_.nonblock) {
    give_up_ = RealClock().MonoNow() + std::chrono::seconds(kNonblockPlacementSeconds);
  } else if (request_.wait_seconds) {
    give_up_ = RealClock().MonoNow() + std::chrono::seconds(*request_.wait_seconds);
  }
  const RunNames run_names = MakeRunNames(request_, ctx_.user, NewRunId());
  PodPlan plan;
  if (hooks_.build_pod) {
    ASSIGN_OR_RETURN(plan, hooks_.build_pod(run_names));
  } else {
    plan.pod = PodObject(request_, run_names);
  }
  RETURN_IF_ERROR(CheckFit(claim_spec, run_names, plan));
  objects_ = std::make_unique<GangObjectsClient>(ctx_, run_names);
  if (absl::Status s = CreateObjects(claim_spec, plan); !s.ok()) {
    objects_->Delete();
    if (InterruptGuard::Interrupted()) return Interrupted();
    return s;
  }
  const RunNames& names = objects_->names();
  std::fprintf(stderr, "k8shazgpu: job %s created in namespace %s (run %s, %s, class %s)\n",
               names.pod.c_str(), ctx_.namespace_name.c_str(), names.run_id.c_str(),
               GangWanted(request_).c_str(), klass.name.c_str());
  std::fputs(plan.created_note.c_str(), stderr);
  absl::StatusOr<bool> admitted =
      admission_ == Admission::kOwn ? AdmitOurselves() : AwaitAdmission();
  if (!admitted.ok()) {
    progress_.Clear();
    objects_->Delete();
    return admitted.status();
  }
  if (InterruptGuard::Interrupted()) return Interrupted();
  if (!*admitted) return GaveUp();
  return Follow();
}

absl::Status GangRunner::CheckFit(const json& claim_spec, const RunNames& names,
                                  const PodPlan& plan) {
  absl::StatusOr<clusterview::View> view = ReadCluster(ctx_);
  if (!view.ok()) return absl::OkStatus();  // not allowed to read it all: the wait will tell
  const json rank =
      GangJobObject(request_, names, {.nodes = request_.nodes}, plan.pod)["spec"]["template"];
  const std::string& ns = ctx_.namespace_name;
  const clusterview::GangPlacement ever =
      clusterview::PlaceNewGang(*view, rank, claim_spec, ns, request_.nodes, /*idle=*/true);
  if (!ever.fits) {
    return absl::FailedPreconditionError(StrCat("can never run: ", GangWanted(request_),
                                                " on distinct nodes does not fit this "
                                                "cluster even with every device free (",
                                                FirstLine(ever.message), "); nothing was created"));
  }
  if (!request_.nonblock) return absl::OkStatus();
  const clusterview::GangPlacement now =
      clusterview::PlaceNewGang(*view, rank, claim_spec, ns, request_.nodes, /*idle=*/false);
  if (!now.fits) {
    return absl::ResourceExhaustedError(StrCat(GangWanted(request_), " do not fit at once now (",
                                               FirstLine(now.message),
                                               "); --nonblock: nothing was created or held"));
  }
  return absl::OkStatus();
}

absl::Status GangRunner::CreateObjects(const json& claim_spec, const PodPlan& plan) {
  const RunNames& names = objects_->names();
  RETURN_IF_ERROR(objects_->CreateTemplate(claim_spec));
  RETURN_IF_ERROR(objects_->CreateConfigMaps(plan.config_maps));
  if (InterruptGuard::Interrupted()) return absl::CancelledError("interrupted");
  const bool cluster = admission_ == Admission::kCluster;
  const GangShape shape{.nodes = request_.nodes,
                        .master_port = kDefaultMasterPort,
                        .gated = admission_ == Admission::kOwn,
                        .kueue_queue = request_.kueue_queue,
                        .pod_group = cluster ? names.pod : ""};
  RETURN_IF_ERROR(objects_->CreateJob(GangJobObject(request_, names, shape, plan.pod)).status());
  if (cluster) {
    RETURN_IF_ERROR(objects_->CreatePodGroup(
        pod_groups_, GangPodGroupObject(names, pod_groups_, request_.nodes, objects_->job())));
  }
  RETURN_IF_ERROR(objects_->CreateService(GangServiceObject(names)));
  if (absl::Status s = objects_->Adopt(); !s.ok()) {
    // Not fatal: everything keeps the run's label for cleanup.
    std::fprintf(stderr, "k8shazgpu: warning: %s\n",
                 std::string(Explain(s, ctx_).message()).c_str());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<json>> GangRunner::Ranks() {
  ASSIGN_OR_RETURN(
      json list,
      ctx_.client->ListAll(kube::kPods, ctx_.namespace_name,
                           {.label_selector = StrCat(kRunLabel, "=", objects_->names().run_id)}));
  std::vector<json> pods;
  if (list.contains("items") && list["items"].is_array())
    pods = list["items"].get<std::vector<json>>();
  return CurrentRanks(pods);
}

bool GangRunner::PastGiveUp() const { return RealClock().MonoNow() >= give_up_; }

std::string GangRunner::WhyNotYet(const std::vector<json>& ranks) {
  if (RealClock().MonoNow() - fit_checked_ < kFitInterval) return why_;
  fit_checked_ = RealClock().MonoNow();
  absl::StatusOr<clusterview::View> view = ReadCluster(ctx_);
  if (!view.ok() && view.status().code() == absl::StatusCode::kPermissionDenied) {
    // Not allowed to see the whole cluster: try. The scheduler is the
    // judge, and ranks it does not all bind within kGangBindSeconds are
    // given back (AdmitOurselves), so nothing is held in part for long.
    if (!blind_said_) {
      progress_.Clear();
      std::fprintf(stderr,
                   "k8shazgpu: cannot read the whole cluster to check the gang's fit (%s); "
                   "releasing the ranks and giving everything back if they are not all placed "
                   "within %ds\n",
                   std::string(FirstLine(std::string(view.status().message()))).c_str(),
                   kGangBindSeconds);
      blind_said_ = true;
    }
    why_ = "";
    return why_;
  }
  if (!view.ok()) {
    why_ = StrCat("cannot read the cluster: ", view.status().message());
    return why_;
  }
  const clusterview::GangPlacement placed = clusterview::PlaceGang(*view, ranks);
  why_ = placed.fits ? "" : placed.message;
  return placed.fits ? "" : why_.empty() ? "does not fit" : why_;
}

absl::StatusOr<bool> GangRunner::AdmitOurselves() {
  admitted_by_ = "k8shazgpu's own gang admission (scheduling gates)";
  pace_.Reset();
  int attempt = 0;
  while (true) {
    if (InterruptGuard::Interrupted()) return false;
    ASSIGN_OR_RETURN(std::vector<json> ranks, Ranks());
    if (!AllRanksWithClaims(ranks, request_.nodes)) {
      progress_.Show(StrCat("creating ", request_.nodes, " ranks (", ranks.size(), " so far)"));
      Pause(pace_.Next());
      continue;
    }
    const bool gated = std::any_of(ranks.begin(), ranks.end(),
                                   [](const json& p) { return HasGate(p, kGangGate); });
    if (!gated) return AwaitBound();
    if (PastGiveUp()) return false;
    const std::string why = WhyNotYet(ranks);
    if (!why.empty()) {
      progress_.Show(
          StrCat("waiting for ", GangWanted(request_), ", holding nothing: ", FirstLine(why)));
      Pause(pace_.Next());
      continue;
    }
    // All fit now: release every rank together.
    progress_.Show(StrCat("all ", request_.nodes, " ranks fit: releasing them"));
    for (const json& rank : ranks) RETURN_IF_ERROR(objects_->Ungate(rank));
    pace_.Reset();
    ASSIGN_OR_RETURN(bool bound, AwaitBound());
    if (bound || InterruptGuard::Interrupted()) return bound;
    // Another run took a node first: give it all back and try again, after
    // a pause that grows and differs between runs, so that two gangs that
    // raced do not race again in step.
    progress_.Clear();
    std::fprintf(stderr,
                 "k8shazgpu: not every rank was placed within %ds (another run took a node); "
                 "giving the devices back and trying again\n",
                 kGangBindSeconds);
    RETURN_IF_ERROR(GiveBack());
    std::random_device random;
    Pause(milliseconds(500 * std::min(++attempt, 6) + random() % 1000));
  }
}

absl::StatusOr<bool> GangRunner::AwaitBound() {
  const auto until = RealClock().MonoNow() + std::chrono::seconds(kGangBindSeconds);
  while (RealClock().MonoNow() < until) {
    if (InterruptGuard::Interrupted()) return false;
    ASSIGN_OR_RETURN(std::vector<json> ranks, Ranks());
    const int bound = CountBound(ranks);
    if (bound == request_.nodes && static_cast<int>(ranks.size()) == request_.nodes) return true;
    // A rank that failed at once ends the Job, which deletes the others
    // before they are all seen placed: the run was admitted, and ended.
    absl::StatusOr<json> job =
        ctx_.client->Get(kube::kJobs, ctx_.namespace_name, objects_->names().pod);
    if (job.ok() && JobEnded(*job)) return true;
    progress_.Show(StrCat(bound, " of ", request_.nodes, " ranks placed"));
    Pause(pace_.Next());
  }
  return false;
}

absl::Status GangRunner::GiveBack() {
  RETURN_IF_ERROR(objects_->SetSuspended(true));
  pace_.Reset();
  const auto until = RealClock().MonoNow() + std::chrono::seconds(60);
  while (RealClock().MonoNow() < until && !InterruptGuard::Interrupted()) {
    ASSIGN_OR_RETURN(std::vector<json> ranks, Ranks());
    if (ranks.empty()) break;
    Pause(pace_.Next());
  }
  return objects_->SetSuspended(false);
}

std::optional<kube::ResourceRef> GangRunner::ServedPodGroups() {
  for (const char* version : {"v1beta1", "v1alpha2"}) {
    kube::ResourceRef ref = kube::kPodGroups;
    ref.version = version;
    // A server that cannot say (an error, not a 404) is taken as not
    // serving them: our own admission works everywhere.
    absl::StatusOr<bool> served = ctx_.client->Serves(ref);
    if (served.ok() && *served) return ref;
  }
  return std::nullopt;
}

absl::StatusOr<bool> GangRunner::AwaitAdmission() {
  const bool kueue = admission_ == Admission::kKueue;
  pace_.Reset();
  admitted_by_ = kueue ? StrCat("Kueue (LocalQueue ", request_.kueue_queue, ")")
                       : StrCat("the cluster's gang scheduling (PodGroup ", objects_->names().pod,
                                ", ", pod_groups_.group, "/", pod_groups_.version, ")");
  while (true) {
    if (InterruptGuard::Interrupted()) return false;
    if (PastGiveUp()) return false;
    ASSIGN_OR_RETURN(std::vector<json> ranks, Ranks());
    const int bound = CountBound(ranks);
    if (bound == request_.nodes) return true;
    // A rank that failed at once ends the Job, which deletes the others.
    absl::StatusOr<json> job =
        ctx_.client->Get(kube::kJobs, ctx_.namespace_name, objects_->names().pod);
    if (job.ok() && JobEnded(*job)) return true;
    const std::string placed = StrCat(bound, " of ", request_.nodes, " ranks placed");
    if (kueue) {
      progress_.Show(StrCat("waiting for Kueue to admit ", GangWanted(request_), " from queue ",
                            request_.kueue_queue, " (", placed, ")"));
    } else {
      const bool all_there = static_cast<int>(ranks.size()) == request_.nodes;
      const std::string why = all_there ? WhyNotYet(ranks) : "";
      progress_.Show(StrCat("waiting for the cluster's gang scheduler to place ",
                            GangWanted(request_), " together (", placed, ")",
                            why.empty() ? "" : ": ", FirstLine(why)));
    }
    Pause(pace_.Next());
  }
}

absl::Status GangRunner::GaveUp() {
  progress_.Clear();
  objects_->Delete();
  const std::string& name = objects_->names().pod;
  if (request_.nonblock) {
    return absl::ResourceExhaustedError(
        StrCat("run ", name, ": ", GangWanted(request_), " did not fit at once within ",
               kNonblockPlacementSeconds, "s (--nonblock)", why_.empty() ? "" : ": ",
               FirstLine(why_), "; deleted it, nothing was held"));
  }
  return absl::ResourceExhaustedError(
      StrCat("run ", name, " was not admitted within ",
             FormatDurationShort(std::chrono::seconds(*request_.wait_seconds)),
             "; deleted it, nothing was held (a longer --wait waits longer in line)"));
}

std::string GangRunner::DetachHints() const {
  const std::string& job = objects_->names().pod;
  const std::string& ns = ctx_.namespace_name;
  return StrCat("job ", job, " runs ", request_.nodes, " ranks\n  follow:   kubectl logs -f -n ",
                ns, " job/", job, "\n  clean up: k8shazgpu cleanup -n ", ns, " --name ", job, "\n");
}

int GangRunner::Interrupted(bool running) {
  progress_.Clear();
  if (running && !request_.reservation && ctx_.stdin_tty && ctx_.stderr_tty &&
      AskDetach("the ranks run on")) {
    std::fputs(DetachHints().c_str(), stderr);
    return 0;
  }
  objects_->Delete();
  std::fprintf(stderr, "k8shazgpu: interrupted; deleted job %s, its %d ranks and their claims\n",
               objects_->names().pod.c_str(), request_.nodes);
  return InterruptGuard::ExitCode();
}

absl::StatusOr<int> GangRunner::Follow() {
  progress_.Clear();
  ASSIGN_OR_RETURN(std::vector<json> ranks, Ranks());
  std::vector<std::string> where;
  for (const json& p : ranks)
    where.push_back(StrCat(RankOf(p), ":", kube::StringAt(p, "/spec/nodeName"_json_pointer)));
  std::fprintf(stderr, "k8shazgpu: %s admitted by %s; ranks on %s\n", GangWanted(request_).c_str(),
               admitted_by_.c_str(), Join(where, ", ").c_str());
  if (request_.reservation) return Reserved();
  if (request_.detach) {
    std::fputs(DetachHints().c_str(), stdout);
    return 0;
  }
  GangLogs logs(*ctx_.client, ctx_.namespace_name, request_.logs_rank);
  pace_.Reset();
  int reads_after_end = 0;
  while (true) {
    if (InterruptGuard::Interrupted()) {
      logs.Stop();
      return Interrupted(/*running=*/true);
    }
    // The Job's own end first: a deadline or a deletion takes ranks away
    // without a failed container to read.
    absl::StatusOr<json> job =
        ctx_.client->Get(kube::kJobs, ctx_.namespace_name, objects_->names().pod);
    if (!job.ok() && kube::IsApiNotFound(job.status())) {
      logs.Stop();
      return absl::AbortedError(
          StrCat("job ", objects_->names().pod, " was deleted before the run ended"));
    }
    if (job.ok() && JobFailedBy(*job, "DeadlineExceeded")) {
      logs.Finish();
      std::fprintf(stderr, "k8shazgpu: the run passed its --timeout; every rank was stopped\n");
      if (!request_.keep) objects_->Delete();
      return kExitTimedOut;  // as timeout(1), and canhazgpu run --timeout
    }
    absl::StatusOr<std::vector<json>> now = Ranks();
    if (now.ok()) {
      logs.Update(*now);
      if (std::optional<GangOutcome> outcome = OutcomeOfRanks(*now, request_.nodes)) {
        logs.Finish();
        if (!outcome->message.empty())
          std::fprintf(stderr, "k8shazgpu: %s\n", outcome->message.c_str());
        if (!request_.keep) objects_->Delete();
        return outcome->exit_code;
      }
    }
    // Ended, yet no rank says how (a rank deleted by hand): a few reads
    // for the ranks' last statuses, then the Job's own word.
    if (job.ok() && JobEnded(*job) && ++reads_after_end > 4) {
      logs.Stop();
      if (!request_.keep) objects_->Delete();
      return absl::AbortedError(StrCat("job ", objects_->names().pod, " ended (",
                                       JobEndReason(*job), ") without a rank's exit code"));
    }
    Pause(pace_.Next());
  }
}

absl::StatusOr<int> GangRunner::Reserved() {
  const std::string& ns = ctx_.namespace_name;
  const std::string& name = objects_->names().pod;
  std::vector<json> ranks;
  pace_.Reset();
  while (true) {
    if (InterruptGuard::Interrupted()) return Interrupted();
    ASSIGN_OR_RETURN(ranks, Ranks());
    int running = 0;
    for (const json& p : ranks) {
      const PodStage stage = StageOf(p);
      if (stage == PodStage::kFinished) {
        progress_.Clear();
        objects_->Delete();
        return absl::AbortedError(StrCat("rank ", RankOf(p), " of reservation ", name,
                                         " ended before it ran: ", OutcomeOf(p, "").message,
                                         "; deleted it"));
      }
      running += stage == PodStage::kRunning;
    }
    if (running == request_.nodes) break;
    progress_.Show(StrCat(running, " of ", request_.nodes, " ranks running"));
    Pause(pace_.Next());
  }
  progress_.Clear();
  std::vector<std::string> lines;
  for (const json& p : ranks) {
    std::vector<std::string> devices;
    for (const json& s : p.value("/status/resourceClaimStatuses"_json_pointer, json::array())) {
      absl::StatusOr<json> claim =
          ctx_.client->Get(kube::kResourceClaims, ns, kube::StringField(s, "resourceClaimName"));
      if (!claim.ok()) continue;
      for (const json& r :
           claim->value("/status/allocation/devices/results"_json_pointer, json::array()))
        devices.push_back(kube::StringField(r, "device"));
    }
    const std::string node = kube::StringAt(p, "/spec/nodeName"_json_pointer);
    lines.push_back(request_.short_output
                        ? StrCat(node, " ", Join(devices, ","))
                        : StrCat("  rank ", RankOf(p), ": ", Join(devices, ", "), " on ", node,
                                 " (pod ", kube::StringAt(p, "/metadata/name"_json_pointer), ")"));
  }
  if (request_.short_output) {
    for (const std::string& line : lines) std::printf("%s\n", line.c_str());
    return 0;
  }
  std::printf("reserved %d nodes", request_.nodes);
  if (request_.timeout_seconds) {
    std::printf(" for %s",
                FormatDurationShort(std::chrono::seconds(*request_.timeout_seconds)).c_str());
  }
  std::printf(
      " (job %s)\n%s\n  shell:   kubectl exec -it -n %s pod/%s -- sh\n"
      "  release: k8shazgpu release -n %s %s\n",
      name.c_str(), Join(lines, "\n").c_str(), ns.c_str(),
      kube::StringAt(ranks[0], "/metadata/name"_json_pointer).c_str(), ns.c_str(), name.c_str());
  return 0;
}

}  // namespace

absl::StatusOr<int> RunGang(Context& ctx, const RunRequest& request, const RunHooks& hooks) {
  InterruptGuard guard;
  GangRunner runner(ctx, request, hooks);
  absl::StatusOr<int> code = runner.Go();
  if (!code.ok() && InterruptGuard::Interrupted()) {
    std::fprintf(stderr, "k8shazgpu: %s\n",
                 std::string(Explain(code.status(), ctx).message()).c_str());
    return InterruptGuard::ExitCode();
  }
  return code;
}

}  // namespace canhazgpu::cli::k8s
