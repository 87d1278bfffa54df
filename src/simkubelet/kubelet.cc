#include "simkubelet/kubelet.h"

#include <signal.h>

#include <condition_variable>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "host/boot_id.h"
#include "simkubelet/container_process.h"
#include "simkubelet/mount_paths.h"
#include "simkubelet/pod_volumes.h"

namespace canhazgpu::simkubelet {
namespace {

using nlohmann::json;

const Clock& ClockOf(const KubeletOptions& options) {
  return options.clock != nullptr ? *options.clock : RealClock();
}

kube::EventReportingSource KubeletSource(const std::string& node) {
  kube::EventReportingSource source;
  source.component = "kubelet";
  source.host = node;
  return source;
}

PluginWatcherOptions WatcherOptions(const KubeletOptions& options, DeviceHealthCache& health,
                                    std::function<void(const std::string&)> on_health_change) {
  PluginWatcherOptions w;
  w.registrar_dir = options.registrar_dir;
  w.client = options.plugin_client;
  w.log = options.log;
  w.health = &health;
  w.on_health_change = std::move(on_health_change);
  return w;
}

std::string Uid(const json& pod) {
  const json uid = pod.value("/metadata/uid"_json_pointer, json());
  return uid.is_string() ? uid.get<std::string>() : "";
}

}  // namespace

Kubelet::Kubelet(kube::Client& client, kubesim::PodLogs& logs, KubeletOptions options)
    : client_(client),
      logs_(logs),
      options_(std::move(options)),
      clock_(ClockOf(options_)),
      events_(client_, KubeletSource(options_.node_name), clock_),
      health_(clock_),
      plugins_(std::make_unique<PluginWatcher>(
          WatcherOptions(options_, health_, [this](const std::string&) { OnHealthChanged(); }))),
      dra_(client_, *plugins_),
      context_{client_,
               logs_,
               events_,
               dra_,
               health_,
               clock_,
               options_.node_name,
               options_.host_ip,
               options_.cdi_dir,
               options_.pods_dir,
               options_.root_dir,
               options_.prepare_retry,
               options_.restart_backoff_initial,
               options_.restart_backoff_max,
               options_.log,
               options_.network} {
  node_.name = options_.node_name;
  node_.labels = options_.node_labels;
  node_.host_ip = options_.host_ip;
  node_.cpu = options_.cpu;
  node_.memory = options_.memory;
  node_.pods = options_.max_pods;
  node_.boot_id = host::ReadBootId().value_or("");
}

Kubelet::~Kubelet() { Stop(); }

absl::Status Kubelet::Start() {
  if (options_.node_name.empty() || options_.pods_dir.empty()) {
    return absl::InvalidArgumentError("the simulated kubelet needs a node name and a pods dir");
  }
  registered_at_ = FormatTimestampSeconds(clock_.Now());
  RETURN_IF_ERROR(RegisterNode(client_, node_, registered_at_));
  RETURN_IF_ERROR(plugins_->Start());
  kube::ListOptions selector;
  selector.field_selector = StrCat("spec.nodeName=", options_.node_name);
  pods_ = std::make_unique<kube::Informer>(
      client_, kube::kPods, "", selector,
      kube::InformerHandlers{.on_add = [this](const json& pod) { OnPod(pod); },
                             .on_update = [this](const json&, const json& pod) { OnPod(pod); },
                             .on_delete = [this](const json& pod) { OnPodDeleted(pod); }});
  pods_->Start();
  {
    MutexLock lock(mu_);
    started_ = true;
  }
  heartbeat_ = std::thread([this] { Heartbeat(); });
  return absl::OkStatus();
}

void Kubelet::Stop() {
  {
    MutexLock lock(mu_);
    if (!started_) return;
    started_ = false;
    stopping_ = true;
    stop_cv_.notify_all();
  }
  if (heartbeat_.joinable()) heartbeat_.join();
  pods_->Stop();  // no new pods from here on
  plugins_->Stop();
  std::map<std::string, std::unique_ptr<PodWorker>> workers;
  {
    MutexLock lock(mu_);
    workers.swap(workers_);
  }
  for (auto& [uid, worker] : workers) worker->Stop();
  // Commands run by exec end with their containers.
  MutexLock lock(mu_);
  for (ContainerProcess* p : exec_processes_) p->Signal(SIGKILL);
  stop_cv_.wait(lock, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return exec_processes_.empty(); });
}

void Kubelet::OnPod(const json& pod) {
  const std::string uid = Uid(pod);
  if (uid.empty()) return;
  MutexLock lock(mu_);
  if (stopping_) return;
  // Workers whose pods are gone and done.
  for (auto it = workers_.begin(); it != workers_.end();) {
    it = it->second->Finished() ? workers_.erase(it) : std::next(it);
  }
  auto it = workers_.find(uid);
  if (it != workers_.end()) {
    it->second->Update(pod);
  } else {
    workers_[uid] = std::make_unique<PodWorker>(context_, pod);
  }
}

void Kubelet::OnPodDeleted(const json& pod) {
  MutexLock lock(mu_);
  auto it = workers_.find(Uid(pod));
  if (it != workers_.end()) it->second->Removed();
}

void Kubelet::OnHealthChanged() {
  MutexLock lock(mu_);
  for (auto& [uid, worker] : workers_) worker->HealthChanged();
}

void Kubelet::Heartbeat() {
  MutexLock lock(mu_);
  while (!stop_cv_.wait_for(lock, options_.node_status_period,
                            [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; })) {
    lock.Unlock();
    absl::Status s =
        UpdateNodeStatus(client_, node_, FormatTimestampSeconds(clock_.Now()), registered_at_);
    if (!s.ok()) options_.log(StrCat("node ", node_.name, ": status: ", s.message()));
    lock.Lock();
  }
}

absl::StatusOr<PodWorker::ExecContext> Kubelet::ExecContextOf(const std::string& ns,
                                                              const std::string& pod,
                                                              const std::string& container) {
  MutexLock lock(mu_);
  for (const auto& [uid, worker] : workers_) {
    if (worker->ns() == ns && worker->name() == pod && !worker->Finished())
      return worker->ExecContextOf(container);
  }
  return absl::FailedPreconditionError(
      StrCat("pod ", pod, " does not run on node ", options_.node_name));
}

absl::Status Kubelet::CheckExec(const std::string& ns, const std::string& pod,
                                const std::string& container) {
  return ExecContextOf(ns, pod, container).status();
}

absl::StatusOr<int> Kubelet::Exec(const std::string& ns, const std::string& pod,
                                  const std::string& container,
                                  const std::vector<std::string>& argv, const ExecIo& io) {
  const auto& output = io.output;
  absl::StatusOr<PodWorker::ExecContext> context = ExecContextOf(ns, pod, container);
  if (!context.ok()) return context.status();
  ProcessSpec spec = context->process;
  spec.stdin_pipe = static_cast<bool>(io.read_input);
  spec.tty = io.tty;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string mounted = RewriteMountPaths(argv[i], context->mounts);
    spec.argv.push_back(
        i > 0 || mounted != argv[i] ? mounted : ResolveFromNodeRoot(options_.root_dir, argv[i]));
  }
  Mutex mu;
  std::condition_variable_any done_cv;
  std::optional<ProcessExit> done;
  absl::StatusOr<std::unique_ptr<ContainerProcess>> process = ContainerProcess::Start(
      spec,
      [&](std::string_view stream, std::string_view line) {
        output(stream == "stderr" ? 2 : 1, line);
      },
      [&](const ProcessExit& exit) {
        MutexLock lock(mu);
        done = exit;
        done_cv.notify_all();
      });
  if (!process.ok()) {
    output(2, StrCat("OCI runtime exec failed: exec failed: unable to start container process: ",
                     process.status().message(), "\n"));
    return 127;
  }
  ContainerProcess* running = process->get();
  {
    // Known to Stop(), which kills it and waits until it is forgotten.
    MutexLock lock(mu_);
    exec_processes_.insert(running);
    if (stopping_) running->Signal(SIGKILL);
  }
  // The client's input, fed on a thread of its own until it ends or the
  // command does.
  std::atomic<bool> stop_input{false};
  std::thread feeder;
  if (io.read_input) {
    feeder = std::thread([&] {
      std::string data;
      while (io.read_input(&data, stop_input)) {
        if (!running->WriteInput(data)) break;
      }
      running->CloseInput();
    });
  }
  {
    MutexLock lock(mu);
    done_cv.wait(lock, [&] { return done.has_value(); });
  }
  stop_input = true;
  if (feeder.joinable()) feeder.join();
  {
    // The last touch of this kubelet: Stop() may return and it go after.
    MutexLock lock(mu_);
    exec_processes_.erase(running);
    stop_cv_.notify_all();
  }
  process->reset();
  return done->exit_code;
}

}  // namespace canhazgpu::simkubelet
