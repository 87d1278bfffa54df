#include "simkubelet/pod_worker.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "core/clock.h"
#include "core/duration.h"
#include "core/strings.h"
#include "simkubelet/cdi_devices.h"
#include "simkubelet/container_env.h"
#include "simkubelet/pod_hosts.h"

namespace canhazgpu::simkubelet {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using SteadyTime = std::chrono::steady_clock::time_point;

std::string Text(const json& object, const json::json_pointer& pointer) {
  const json v = object.value(pointer, json());
  return v.is_string() ? v.get<std::string>() : "";
}

SteadyTime SteadyNow() { return RealClock().MonoNow(); }

// How long a container gets between SIGTERM and SIGKILL when the kubelet
// stops it after its pod left the API without graceful deletion.
constexpr int64_t kDefaultGraceSeconds = 30;
// After SIGKILL, how long to wait for the process to be reaped.
constexpr milliseconds kKillWait{10'000};

// No mount namespace: the container's paths are rewritten to the volumes
// instead (mount_paths.h). A program no volume holds comes from the node
// root, if it is there.
std::vector<std::string> MountedArgv(const json& container, const std::vector<std::string>& env,
                                     const std::vector<MountPoint>& mounts,
                                     const std::string& root_dir) {
  std::vector<std::string> argv = ContainerArgv(container, env);
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string mounted = RewriteMountPaths(argv[i], mounts);
    argv[i] = i > 0 || mounted != argv[i] ? mounted : ResolveFromNodeRoot(root_dir, argv[i]);
  }
  return argv;
}

}  // namespace

PodWorker::PodWorker(NodeContext& node, json pod)
    : node_(node),
      ns_(Text(pod, "/metadata/namespace"_json_pointer)),
      name_(Text(pod, "/metadata/name"_json_pointer)),
      uid_(Text(pod, "/metadata/uid"_json_pointer)),
      spec_(pod.value("spec", json::object())),
      pod_(std::move(pod)) {
  restart_policy_ = spec_.value("restartPolicy", "Always");
  record_.host_ip = node_.host_ip;
  for (const char* key : {"initContainers", "containers"}) {
    const bool init = std::string(key) == "initContainers";
    const json list = spec_.value(key, json::array());
    for (size_t i = 0; i < list.size(); ++i) {
      ContainerRecord r;
      r.name = list[i].value("name", "");
      r.image = list[i].value("image", "");
      // What the kubelet shows before the first start: init containers
      // and containers waiting on the sandbox, containers behind init
      // containers waiting on those.
      if (init ? i > 0 : !spec_.value("initContainers", json::array()).empty()) {
        r.reason = "PodInitializing";
      }
      (init ? record_.init_containers : record_.containers).push_back(std::move(r));
      auto slot = std::make_unique<Slot>();
      slot->init = init;
      slot->index = i;
      slots_.push_back(std::move(slot));
    }
  }
  thread_ = std::thread([this] { Run(); });
}

PodWorker::~PodWorker() { Stop(); }

void PodWorker::Update(json pod) {
  MutexLock lock(mu_);
  pod_ = std::move(pod);
  wake_.notify_all();
}

void PodWorker::Removed() {
  MutexLock lock(mu_);
  removed_ = true;
  wake_.notify_all();
}

void PodWorker::HealthChanged() {
  MutexLock lock(mu_);
  health_changed_ = true;
  wake_.notify_all();
}

void PodWorker::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

bool PodWorker::Finished() const {
  MutexLock lock(mu_);
  return finished_;
}

bool PodWorker::Stopping() {
  MutexLock lock(mu_);
  return stopping_;
}

bool PodWorker::DeletionRequested() {
  MutexLock lock(mu_);
  return removed_ || pod_.value("/metadata/deletionTimestamp"_json_pointer, json()).is_string();
}

json PodWorker::Pod() {
  MutexLock lock(mu_);
  return pod_;
}

void PodWorker::WaitForWork(std::optional<SteadyTime> until) {
  MutexLock lock(mu_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (stopping_ || removed_ || health_changed_) return true;
    if (pod_.value("/metadata/deletionTimestamp"_json_pointer, json()).is_string()) return true;
    return std::any_of(slots_.begin(), slots_.end(),
                       [](const auto& s) { return s->exit.has_value() && !s->exit_handled; });
  };
  if (until.has_value()) {
    wake_.wait_until(lock, *until, ready);
  } else {
    wake_.wait(lock, ready);
  }
}

std::string PodWorker::Now() const { return FormatTimestampSeconds(node_.clock.Now()); }

ContainerRecord& PodWorker::Record(const Slot& slot) {
  return slot.init ? record_.init_containers[slot.index] : record_.containers[slot.index];
}

const json& PodWorker::Spec(const Slot& slot) {
  return spec_[slot.init ? "initContainers" : "containers"][slot.index];
}

void PodWorker::Event(const std::string& type, const std::string& reason,
                      const std::string& message) {
  kube::EventObjectReference about;
  about.api_version = "v1";
  about.kind = "Pod";
  about.namespace_name = ns_;
  about.name = name_;
  about.uid = uid_;
  absl::Status s = node_.events.Record(about, type, reason, message);
  if (!s.ok()) node_.log(StrCat("pod ", ns_, "/", name_, ": event ", reason, ": ", s.message()));
}

void PodWorker::Run() {
  const std::string phase = Text(Pod(), "/status/phase"_json_pointer);
  if (phase == "Succeeded" || phase == "Failed") {
    // Finished before this kubelet started: only its removal is left.
    record_.phase = phase;
    while (!DeletionRequested() && !Stopping()) WaitForWork(std::nullopt);
    if (!Stopping()) TerminateAndRemove();
    return;
  }
  record_.start_time = Now();
  WriteStatus();
  if (!MountVolumes() || !PrepareClaims() || !JoinNetwork()) {
    if (!Stopping()) TerminateAndRemove();
    return;
  }
  record_.sandbox_ready = true;
  std::optional<SteadyTime> deadline;
  if (spec_.value("activeDeadlineSeconds", json()).is_number_integer()) {
    deadline = SteadyNow() + std::chrono::seconds(spec_["activeDeadlineSeconds"].get<int64_t>());
  }
  bool terminal = false;
  while (true) {
    {
      MutexLock lock(mu_);
      health_changed_ = false;  // the status written below has the news
    }
    if (!terminal && AdvancePod(deadline)) {
      terminal = true;
      continue;
    }
    std::optional<SteadyTime> until;
    if (!terminal) {
      until = deadline;
      for (const auto& slot : slots_) {
        if (slot->restart_at.has_value() && (!until || *slot->restart_at < *until)) {
          until = slot->restart_at;
        }
      }
    }
    WaitForWork(until);
    if (Stopping()) {
      KillAll(milliseconds(0), "");
      LeaveNetwork();
      return;
    }
    if (DeletionRequested()) {
      TerminateAndRemove();
      return;
    }
  }
}

bool PodWorker::AdvancePod(std::optional<SteadyTime> deadline) {
  // Exits the process threads reported.
  for (auto& slot : slots_) {
    if (std::optional<ProcessExit> exit = TakeUnhandledExit(*slot)) HandleExit(*slot, *exit);
  }
  // Restarts that are due.
  for (auto& slot : slots_) {
    if (slot->restart_at.has_value() && SteadyNow() >= *slot->restart_at) {
      slot->restart_at.reset();
      StartContainer(*slot);
    }
  }
  if (deadline.has_value() && SteadyNow() >= *deadline) {
    KillAll(GracePeriod(), "DeadlineExceeded");
    record_.phase = "Failed";
    record_.reason = "DeadlineExceeded";
    record_.message = "Pod was active on the node longer than the specified deadline";
    Event(kube::kEventNormal, "DeadlineExceeded", record_.message);
    Finalize();
    return true;
  }
  // Init containers one after another, then the containers together.
  auto settled = [](const Slot& s, const ContainerRecord& r) {
    return r.state == ContainerRecord::State::kTerminated && !s.restart_at.has_value();
  };
  bool init_done = true, init_failed = false;
  for (auto& slot : slots_) {
    if (!slot->init) continue;
    const ContainerRecord& r = Record(*slot);
    if (r.Succeeded()) continue;
    init_done = false;
    // (A start that fails at once settles it right here.)
    if (!settled(*slot, r) && !slot->attempted) StartContainer(*slot);
    init_failed = settled(*slot, r);
    break;
  }
  bool any_ran = false, all_settled = true, all_succeeded = true;
  for (auto& slot : slots_) {
    if (slot->init) continue;
    if (init_done && !slot->attempted) StartContainer(*slot);
    const ContainerRecord& r = Record(*slot);
    any_ran = any_ran || slot->runs > 0;
    all_settled = all_settled && settled(*slot, r);
    all_succeeded = all_succeeded && r.Succeeded();
  }
  if (init_failed || (init_done && all_settled)) {
    record_.phase = !init_failed && all_succeeded ? "Succeeded" : "Failed";
    Finalize();
    return true;
  }
  record_.phase = any_ran ? "Running" : "Pending";
  WriteStatus();
  return false;
}

std::string PodWorker::PodDir() const {
  return StrCat(node_.pods_dir, "/", ns_, "_", name_, "_", uid_);
}

bool PodWorker::MountVolumes() {
  const VolumeContext context{node_.client, ns_, node_.root_dir, PodDir() + "/volumes"};
  while (true) {
    if (Stopping() || DeletionRequested()) return false;
    {
      MutexLock lock(mu_);
      health_changed_ = false;  // nothing to write yet; would only wake us
    }
    absl::StatusOr<VolumePaths> volumes = MaterializeVolumes(Pod(), context);
    if (volumes.ok()) {
      volumes_ = std::move(*volumes);
      return true;
    }
    // The kubelet's event; the pod stays Pending (ContainerCreating) and the
    // kubelet tries again — unless no retry can help.
    Event(kube::kEventWarning, "FailedMount", std::string(volumes.status().message()));
    const bool hopeless = absl::IsUnimplemented(volumes.status());
    WaitForWork(hopeless ? std::nullopt : std::optional(SteadyNow() + node_.prepare_retry));
  }
}

bool PodWorker::PrepareClaims() {
  while (true) {
    if (Stopping() || DeletionRequested()) return false;
    absl::StatusOr<std::vector<PreparedClaim>> prepared = node_.dra.PrepareResources(Pod());
    if (prepared.ok()) {
      prepared_ = std::move(*prepared);
      return true;
    }
    // The kubelet's event, the driver's message verbatim inside; the pod
    // stays Pending and the kubelet tries again.
    Event(kube::kEventWarning, "FailedPrepareDynamicResources",
          StrCat("Failed to prepare dynamic resources: ", prepared.status().message()));
    WaitForWork(SteadyNow() + node_.prepare_retry);
  }
}

bool PodWorker::JoinNetwork() {
  const json host_network = spec_.value("hostNetwork", json());
  if (node_.network == nullptr || (host_network.is_boolean() && host_network.get<bool>())) {
    record_.pod_ip = node_.host_ip;
    return true;
  }
  const PodHostEntry entry = PodHostEntryOf(Pod());
  const std::string hosts_file = PodDir() + "/etc-hosts";
  while (true) {
    if (Stopping() || DeletionRequested()) return false;
    absl::StatusOr<std::string> ip = node_.network->Attach(entry, hosts_file);
    if (ip.ok()) {
      on_network_ = true;
      record_.pod_ip = *ip;
      if (node_.network->isolated()) sandbox_ = {hosts_file, entry.hostname};
      return true;
    }
    // The kubelet's words when the CNI plugin fails; the pod stays Pending.
    Event(kube::kEventWarning, "FailedCreatePodSandBox",
          StrCat("Failed to create pod sandbox: ", ip.status().message()));
    WaitForWork(SteadyNow() + node_.prepare_retry);
  }
}

void PodWorker::LeaveNetwork() {
  if (!on_network_) return;
  on_network_ = false;
  node_.network->Detach(uid_);
}

void PodWorker::RetryLater(Slot& slot) {
  slot.backoff = slot.backoff.count() == 0 ? node_.restart_backoff_initial
                                           : std::min(slot.backoff * 2, node_.restart_backoff_max);
  slot.restart_at = SteadyNow() + slot.backoff;
}

void PodWorker::BeginRun(Slot& slot) {
  ContainerRecord& r = Record(slot);
  if (slot.process != nullptr) slot.process.reset();  // ended; joins its thread
  {
    MutexLock lock(mu_);
    slot.exit.reset();
    slot.exit_handled = false;
  }
  r.restart_count = slot.runs++;
  if (r.restart_count > 0) {
    node_.logs.Restart(ns_, name_, r.name);
  } else {
    node_.logs.Start(ns_, name_, r.name);
  }
}

absl::StatusOr<std::unique_ptr<ContainerProcess>> PodWorker::StartProcess(Slot& slot,
                                                                          ProcessSpec spec) {
  const std::string container_name = Record(slot).name;
  Slot* s = &slot;
  return ContainerProcess::Start(
      spec,
      [this, container_name](std::string_view, std::string_view line) {
        node_.logs.Append(ns_, name_, container_name, line);
      },
      [this, container_name, s](const ProcessExit& exit) {
        node_.logs.Finish(ns_, name_, container_name);
        MutexLock lock(mu_);
        running_.erase(container_name);
        s->exit = exit;
        wake_.notify_all();
      });
}

void PodWorker::StartContainer(Slot& slot) {
  slot.attempted = true;
  ContainerRecord& r = Record(slot);
  const json& container = Spec(slot);
  const std::string dir = StrCat(PodDir(), "/", r.name);
  // A fresh directory for every run, as a container gets a fresh root.
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);

  // What the runtime would fail at before the process exists: the
  // container waits and the kubelet tries again with back-off.
  auto cannot_create = [&](const std::string& reason, const std::string& message) {
    r.state = ContainerRecord::State::kWaiting;
    r.reason = reason;
    r.message = message;
    Event(kube::kEventWarning, "Failed", StrCat("Error: ", message));
    RetryLater(slot);
  };
  absl::StatusOr<CdiEdits> edits =
      ResolveCdiDevices(node_.cdi_dir, CdiIdsForContainer(container, prepared_));
  if (!edits.ok()) {
    cannot_create("CreateContainerError",
                  StrCat("failed to inject CDI devices: ", edits.status().message()));
    return;
  }
  absl::StatusOr<std::vector<std::string>> env =
      ContainerEnvironment(Pod(), container, {dir, node_.host_ip, record_.pod_ip}, *edits);
  if (!env.ok()) {
    cannot_create("CreateContainerConfigError", std::string(env.status().message()));
    return;
  }
  absl::StatusOr<std::vector<MountPoint>> mounts = ContainerMounts(container, volumes_);
  if (!mounts.ok()) {
    cannot_create("CreateContainerConfigError", std::string(mounts.status().message()));
    return;
  }
  // Expanded from the environment as written, so that no word is rewritten
  // twice.
  std::vector<std::string> argv = MountedArgv(container, *env, *mounts, node_.root_dir);
  RewriteEnvironment(*env, *mounts);
  // exec starts there too (running_).
  const std::string work_dir = WorkingDirectory(container.value("workingDir", ""), *mounts, dir);
  std::filesystem::create_directories(work_dir, ec);

  BeginRun(slot);
  r.container_id = StrCat("sim://", uid_, "/", r.name, "/", r.restart_count);
  const std::string container_name = r.name;
  absl::StatusOr<std::unique_ptr<ContainerProcess>> process =
      StartProcess(slot, {.argv = argv, .env = *env, .work_dir = work_dir, .sandbox = sandbox_});
  if (!process.ok()) {
    // The runtime created the container but could not start its process.
    const std::string message = StrCat("failed to create task: unable to start container process: ",
                                       process.status().message());
    node_.logs.Finish(ns_, name_, container_name);
    r.started_at.clear();
    r.message = message;
    Event(kube::kEventWarning, "Failed", StrCat("Error: ", message));
    HandleExit(slot, ProcessExit{.exit_code = 128, .signal = 0}, "StartError");
    return;
  }
  slot.process = std::move(*process);
  {
    MutexLock lock(mu_);
    if (!slot.exit.has_value()) {
      running_[container_name] =
          ExecContext{ProcessSpec{.env = *env, .work_dir = work_dir, .sandbox = sandbox_}, *mounts};
    }
  }
  r.state = ContainerRecord::State::kRunning;
  r.reason.clear();
  r.message.clear();
  r.started_at = Now();
  r.finished_at.clear();
  Event(kube::kEventNormal, "Started", StrCat("Started container ", r.name));
}

std::optional<ProcessExit> PodWorker::TakeUnhandledExit(Slot& slot) {
  MutexLock lock(mu_);
  if (!slot.exit.has_value() || slot.exit_handled) return std::nullopt;
  slot.exit_handled = true;
  return slot.exit;
}

void PodWorker::HandleExit(Slot& slot, const ProcessExit& exit, const std::string& reason) {
  ContainerRecord& r = Record(slot);
  const std::string message = reason.empty() ? "" : r.message;
  r.Terminate(exit.exit_code, exit.signal, Now(), reason);
  r.message = message;
  // Init containers rerun only when they failed; containers as the policy says.
  const bool restart = restart_policy_ == "Always"
                           ? (!slot.init || exit.exit_code != 0)
                           : restart_policy_ == "OnFailure" && exit.exit_code != 0;
  if (!restart) return;
  r.last_terminated = ContainerStatusJson(r, slot.init)["state"]["terminated"];
  RetryLater(slot);
  r.state = ContainerRecord::State::kWaiting;
  r.reason = "CrashLoopBackOff";
  r.message =
      StrCat("back-off ", FormatDurationShort(slot.backoff),
             " restarting failed container=", r.name, " pod=", name_, "_", ns_, "(", uid_, ")");
  Event(kube::kEventWarning, "BackOff",
        StrCat("Back-off restarting failed container ", r.name, " in pod ", name_, "_", ns_, "(",
               uid_, ")"));
}

std::chrono::milliseconds PodWorker::GracePeriod() {
  const json pod = Pod();
  json seconds = pod.value("/metadata/deletionGracePeriodSeconds"_json_pointer, json());
  if (!seconds.is_number_integer()) {
    seconds = pod.value("/spec/terminationGracePeriodSeconds"_json_pointer, json());
  }
  const int64_t s = seconds.is_number_integer() ? seconds.get<int64_t>() : kDefaultGraceSeconds;
  return std::chrono::seconds(std::max<int64_t>(s, 0));
}

void PodWorker::KillAll(milliseconds grace, const std::string& reason) {
  std::vector<Slot*> running;
  for (auto& slot : slots_) {
    slot->restart_at.reset();
    bool ended = false;
    {
      MutexLock lock(mu_);
      ended = slot->exit.has_value();
    }
    if (slot->process != nullptr && !ended) running.push_back(slot.get());
  }
  for (Slot* slot : running) {
    if (!reason.empty()) {
      Event(kube::kEventNormal, "Killing", StrCat("Stopping container ", Record(*slot).name));
    }
    slot->process->Signal(grace.count() > 0 ? SIGTERM : SIGKILL);
  }
  const SteadyTime deadline = SteadyNow() + grace;
  for (Slot* slot : running) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyNow());
    if (!slot->process->Wait(std::max(left, milliseconds(0))).has_value()) {
      slot->process->Signal(SIGKILL);
      slot->process->Wait(kKillWait);
    }
  }
  for (auto& slot : slots_) {
    if (std::optional<ProcessExit> exit = TakeUnhandledExit(*slot)) {
      Record(*slot).Terminate(exit->exit_code, exit->signal, Now());
    }
  }
}

void PodWorker::Finalize() {
  WriteStatus();
  LeaveNetwork();  // every container has ended
  // As the kubelet: a pod that finished gives its claims back at once.
  while (true) {
    absl::Status s = node_.dra.UnprepareResources(uid_);
    if (s.ok()) return;
    node_.log(StrCat("pod ", ns_, "/", name_, ": ", s.message()));
    if (Stopping()) return;
    WaitForWork(SteadyNow() + node_.prepare_retry);
    if (Stopping()) return;
  }
}

void PodWorker::TerminateAndRemove() {
  bool removed;
  {
    MutexLock lock(mu_);
    removed = removed_;
  }
  KillAll(GracePeriod(), "Killing");
  LeaveNetwork();
  if (!removed && record_.phase != "Succeeded" && record_.phase != "Failed") {
    bool all_succeeded = !record_.containers.empty();
    for (const ContainerRecord& r : record_.containers)
      all_succeeded = all_succeeded && r.Succeeded();
    record_.phase = all_succeeded ? "Succeeded" : "Failed";
    WriteStatus();
  }
  while (!node_.dra.UnprepareResources(uid_).ok()) {
    if (Stopping()) return;
    WaitForWork(SteadyNow() + node_.prepare_retry);
    if (Stopping()) return;
  }
  RemoveVolumes(PodDir() + "/volumes");
  if (removed) {
    node_.logs.Forget(ns_, name_);  // what the killed containers printed last
  } else {
    kube::DeleteOptions options;
    options.precondition_uid = uid_;
    options.grace_period_seconds = 0;
    absl::Status s = node_.client.Delete(kube::kPods, ns_, name_, options);
    if (!s.ok() && !kube::IsApiNotFound(s)) {
      node_.log(StrCat("pod ", ns_, "/", name_, ": ", s.message()));
    }
  }
  MutexLock lock(mu_);
  finished_ = true;
}

void PodWorker::WriteStatus() {
  json scheduled;
  for (const json& c : Pod().value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == "PodScheduled") scheduled = c;
  }
  for (auto& slot : slots_) {
    Record(*slot).allocated_resources_status =
        AllocatedResourcesStatus(Spec(*slot), prepared_, node_.health);
  }
  json status = PodStatusJson(record_, scheduled, Now());
  if (status != last_written_) {
    kube::PatchOptions options;
    options.subresource = "status";
    absl::StatusOr<json> written = node_.client.Patch(
        kube::kPods, ns_, name_, kube::PatchType::kMerge, {{"status", status}}, options);
    if (written.ok()) {
      last_written_ = std::move(status);
    } else if (kube::IsApiNotFound(written.status())) {
      Removed();
    } else {
      node_.log(StrCat("pod ", ns_, "/", name_, ": status: ", written.status().message()));
    }
  }
  // Readiness reaches the Services' names after the status, as the
  // endpoints follow a pod's status in a cluster.
  if (on_network_) {
    node_.network->SetReady(uid_, std::all_of(record_.containers.begin(), record_.containers.end(),
                                              [](const ContainerRecord& c) {
                                                return c.state == ContainerRecord::State::kRunning;
                                              }));
  }
}

absl::StatusOr<PodWorker::ExecContext> PodWorker::ExecContextOf(
    const std::string& container) const {
  bool known = false;
  for (const char* list : {"initContainers", "containers"}) {
    for (const json& c : spec_.value(list, json::array()))
      known = known || c.value("name", json()) == container;
  }
  if (!known) {
    return absl::NotFoundError(StrCat("container ", container, " is not valid for pod ", name_));
  }
  MutexLock lock(mu_);
  auto it = running_.find(container);
  if (it == running_.end()) {
    return absl::FailedPreconditionError(
        StrCat("container ", container, " is not running in pod ", name_));
  }
  return it->second;
}

}  // namespace canhazgpu::simkubelet
