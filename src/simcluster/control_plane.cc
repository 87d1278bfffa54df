#include "simcluster/control_plane.h"

#include <utility>
#include <vector>

namespace canhazgpu::simcluster {

using clusterview::ByKey;
using clusterview::KeyOf;
using clusterview::PoolsFromJson;
using clusterview::View;

absl::StatusOr<std::unique_ptr<ControlPlane>> ControlPlane::Create(kube::Client& client,
                                                                   ControlPlaneOptions options) {
  if (options.clock == nullptr)
    return absl::InvalidArgumentError("the control plane needs a clock");
  return std::unique_ptr<ControlPlane>(new ControlPlane(client, std::move(options)));
}

ControlPlane::ControlPlane(kube::Client& client, ControlPlaneOptions options)
    : client_(client),
      options_(std::move(options)),
      workload_writer_(client, pod_overlay_, *options_.clock, options_.log),
      deployments_controller_(workload_writer_),
      replica_sets_controller_(workload_writer_),
      jobs_controller_(client, workload_writer_),
      daemon_sets_controller_(workload_writer_),
      controller_(client, pod_overlay_, claim_overlay_, options_.log),
      scheduler_(client, pod_overlay_, claim_overlay_, *options_.clock, options_.scheduler_name,
                 options_.log),
      garbage_collector_(client, options_.log) {
  auto wake = [this](Overlay* overlay) {
    kube::InformerHandlers h;
    h.on_add = [this](const nlohmann::json&) { Wake(); };
    h.on_update = [this](const nlohmann::json&, const nlohmann::json&) { Wake(); };
    h.on_delete = [this, overlay](const nlohmann::json& object) {
      if (overlay != nullptr) overlay->Erase(object);
      Wake();
    };
    return h;
  };
  pods_ = std::make_unique<kube::Informer>(client_, kube::kPods, "", kube::ListOptions{},
                                           wake(&pod_overlay_));
  claims_ = std::make_unique<kube::Informer>(client_, kube::kResourceClaims, "",
                                             kube::ListOptions{}, wake(&claim_overlay_));
  nodes_ = std::make_unique<kube::Informer>(client_, kube::kNodes, "", kube::ListOptions{},
                                            wake(nullptr));
  slices_ = std::make_unique<kube::Informer>(client_, kube::kResourceSlices, "",
                                             kube::ListOptions{}, wake(nullptr));
  templates_ = std::make_unique<kube::Informer>(client_, kube::kResourceClaimTemplates, "",
                                                kube::ListOptions{}, wake(nullptr));
  classes_ = std::make_unique<kube::Informer>(client_, kube::kDeviceClasses, "",
                                              kube::ListOptions{}, wake(nullptr));
  config_maps_ = std::make_unique<kube::Informer>(client_, kube::kConfigMaps, "",
                                                  kube::ListOptions{}, wake(nullptr));
  deployments_ = std::make_unique<kube::Informer>(client_, kDeployments, "", kube::ListOptions{},
                                                  wake(&deployment_overlay_));
  replica_sets_ = std::make_unique<kube::Informer>(client_, kReplicaSets, "", kube::ListOptions{},
                                                   wake(&replica_set_overlay_));
  jobs_ = std::make_unique<kube::Informer>(client_, kJobs, "", kube::ListOptions{},
                                           wake(&job_overlay_));
  daemon_sets_ = std::make_unique<kube::Informer>(client_, kDaemonSets, "", kube::ListOptions{},
                                                  wake(&daemon_set_overlay_));
  if (options_.generic_workload) {
    pod_groups_ = std::make_unique<kube::Informer>(client_, kube::kPodGroups, "",
                                                   kube::ListOptions{}, wake(nullptr));
  }
}

std::vector<kube::Informer*> ControlPlane::Informers() {
  std::vector<kube::Informer*> all = {pods_.get(),        nodes_.get(),       slices_.get(),
                                      claims_.get(),      templates_.get(),   classes_.get(),
                                      config_maps_.get(), deployments_.get(), replica_sets_.get(),
                                      jobs_.get(),        daemon_sets_.get()};
  if (pod_groups_) all.push_back(pod_groups_.get());
  return all;
}

ControlPlane::~ControlPlane() { Stop(); }

absl::Status ControlPlane::Start() {
  const std::vector<kube::Informer*> all = Informers();
  for (kube::Informer* i : all) i->Start();
  for (kube::Informer* i : all) {
    if (!i->WaitForSync(options_.sync_timeout)) {
      Stop();
      return absl::UnavailableError(
          "the control plane could not list the cluster's objects; is the API server up?");
    }
  }
  loop_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void ControlPlane::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (loop_.joinable()) loop_.join();
  // Each stop ends its watch at once (a StopPipe), so in turn.
  for (kube::Informer* informer : Informers()) informer->Stop();
}

void ControlPlane::Wake() {
  {
    MutexLock lock(mu_);
    dirty_ = true;
  }
  cv_.notify_all();
}

int64_t ControlPlane::WaitForPasses(int64_t after, std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  cv_.wait_for(lock, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return passes_ > after; });
  return passes_;
}

View ControlPlane::Snapshot() {
  View view;
  view.pods = ByKey(pods_->List());
  pod_overlay_.Apply(view.pods);
  view.claims = ByKey(claims_->List());
  claim_overlay_.Apply(view.claims);
  view.templates = ByKey(templates_->List());
  view.nodes = ByKey(nodes_->List());
  view.classes = ByKey(classes_->List());
  view.pools = PoolsFromJson(slices_->List());
  return view;
}

Workloads ControlPlane::WorkloadSnapshot() {
  Workloads w;
  w.deployments = ByKey(deployments_->List());
  deployment_overlay_.Apply(w.deployments);
  w.replica_sets = ByKey(replica_sets_->List());
  replica_set_overlay_.Apply(w.replica_sets);
  w.jobs = ByKey(jobs_->List());
  job_overlay_.Apply(w.jobs);
  w.daemon_sets = ByKey(daemon_sets_->List());
  daemon_set_overlay_.Apply(w.daemon_sets);
  return w;
}

std::vector<WatchedObjects> ControlPlane::Watched(const View& view, const Workloads& workloads) {
  auto values = [](const std::map<std::string, nlohmann::json>& objects) {
    std::vector<nlohmann::json> out;
    out.reserve(objects.size());
    for (const auto& [key, object] : objects) out.push_back(object);
    return out;
  };
  return {{&kube::kPods, values(view.pods)},
          {&kube::kResourceClaims, values(view.claims)},
          {&kube::kResourceClaimTemplates, values(view.templates)},
          {&kube::kNodes, values(view.nodes)},
          {&kube::kDeviceClasses, values(view.classes)},
          {&kube::kResourceSlices, slices_->List()},
          {&kube::kConfigMaps, config_maps_->List()},
          {&kDeployments, values(workloads.deployments)},
          {&kReplicaSets, values(workloads.replica_sets)},
          {&kJobs, values(workloads.jobs)},
          {&kDaemonSets, values(workloads.daemon_sets)},
          {&kube::kPodGroups, pod_groups_ ? pod_groups_->List() : std::vector<nlohmann::json>{}}};
}

void ControlPlane::Loop() {
  for (;;) {
    {
      MutexLock lock(mu_);
      cv_.wait_for(lock, options_.resync,
                   [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return dirty_ || stop_; });
      if (stop_) return;
      dirty_ = false;
    }
    View view = Snapshot();
    Workloads workloads = WorkloadSnapshot();
    workload_writer_.StartPass(view);
    deployments_controller_.Sync(view,
                                 {&kDeployments, &deployment_overlay_, &workloads.deployments},
                                 {&kReplicaSets, &replica_set_overlay_, &workloads.replica_sets});
    replica_sets_controller_.Sync(view,
                                  {&kReplicaSets, &replica_set_overlay_, &workloads.replica_sets});
    jobs_controller_.Sync(view, {&kJobs, &job_overlay_, &workloads.jobs});
    daemon_sets_controller_.Sync(view,
                                 {&kDaemonSets, &daemon_set_overlay_, &workloads.daemon_sets});
    controller_.Sync(view);
    scheduler_.ScheduleAll(view, pod_groups_ ? ByKey(pod_groups_->List()) : PodGroups{});
    garbage_collector_.Collect(Watched(view, workloads));
    {
      MutexLock lock(mu_);
      ++passes_;
    }
    cv_.notify_all();
  }
}

}  // namespace canhazgpu::simcluster
