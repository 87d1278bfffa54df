#include "daemon/node_daemon.h"

#include <poll.h>

#include <chrono>
#include <optional>

#include "core/make_directories.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "driver/device_health.h"
#include "kubeletplugin/unix_socket.h"
#include "store/change_watcher.h"

namespace canhazgpu::daemon {
namespace {

// Why a prepare failed, on the claim: `kubectl describe resourceclaim`
// shows it beside the kubelet's FailedPrepareDynamicResources on the pod.
constexpr char kPrepareRefused[] = "PrepareRefused";
constexpr char kCheckpointCorrupted[] = "CheckpointCorrupted";
// A GPU of a prepared claim that the host store lost and someone else took:
// two owners of one GPU.
constexpr char kReservationConflict[] = "ReservationConflict";

kube::EventObjectReference ClaimObject(const driver::ClaimRef& ref) {
  kube::EventObjectReference about;
  about.api_version = "resource.k8s.io/v1";
  about.kind = "ResourceClaim";
  about.namespace_name = ref.namespace_name;
  about.name = ref.name;
  about.uid = ref.uid;
  return about;
}

// Counts and times the kubelet's calls on their way to the preparer, and
// reports each refused claim as an Event.
class MeteredNodeService : public driver::NodeService {
 public:
  // `after` runs after each call (the claims' device status follows).
  MeteredNodeService(driver::NodeService& inner, metrics::Metric& calls, metrics::Metric& seconds,
                     kube::EventQueue& events, const Clock& clock, std::function<void()> after)
      : inner_(inner),
        calls_(calls),
        seconds_(seconds),
        events_(events),
        clock_(clock),
        after_(std::move(after)) {}

  std::map<std::string, driver::PrepareResult> PrepareClaims(
      const std::vector<driver::ClaimRef>& claims, const driver::CallBounds& bounds) override {
    const auto start = clock_.MonoNow();
    auto out = inner_.PrepareClaims(claims, bounds);
    for (const driver::ClaimRef& ref : claims) {
      auto it = out.find(ref.uid);
      // A claim the call ran out of time for was not refused: the kubelet
      // retries it, and an Event each would spend the API requests that
      // stopping at the deadline saved.
      if (it == out.end() || it->second.error.empty() || it->second.out_of_time) continue;
      // The same words the kubelet gets: what is wrong and what to do.
      events_.Post(ClaimObject(ref), kube::kEventWarning, kPrepareRefused, it->second.error);
    }
    Record(
        "prepare", start,
        [&] {
          int failed = 0;
          for (const auto& [uid, r] : out) failed += r.error.empty() ? 0 : 1;
          return failed;
        }(),
        out.size());
    after_();
    return out;
  }
  std::map<std::string, std::string> UnprepareClaims(const std::vector<driver::ClaimRef>& claims,
                                                     const driver::CallBounds& bounds) override {
    const auto start = clock_.MonoNow();
    auto out = inner_.UnprepareClaims(claims, bounds);
    int failed = 0;
    for (const auto& [uid, error] : out) failed += error.empty() ? 0 : 1;
    Record("unprepare", start, failed, out.size());
    after_();
    return out;
  }

 private:
  void Record(const char* op, MonoTime start, int failed, size_t total) {
    seconds_.Observe(std::chrono::duration<double>(clock_.MonoNow() - start).count(), {op});
    calls_.Add(static_cast<double>(total) - failed, {op, "ok"});
    calls_.Add(failed, {op, "error"});
  }
  driver::NodeService& inner_;
  metrics::Metric& calls_;
  metrics::Metric& seconds_;
  kube::EventQueue& events_;
  const Clock& clock_;
  const std::function<void()> after_;
};

// The MPS daemons of a node that shares GPUs (docs/sharing.md): under the
// host's driver root, their state beside the host store's file.
std::unique_ptr<mps::MpsDaemons> NewMpsDaemons(const NodeDaemonOptions& options,
                                               const driver::NodeParts& parts) {
  mps::MpsOptions mps{.driver_root = parts.sharing.driver_root, .state_dir = options.mps_state_dir};
  if (mps.state_dir.empty()) {
    const size_t slash = options.state_path.rfind('/');
    mps.state_dir =
        StrCat(slash == std::string::npos ? "." : options.state_path.substr(0, slash), "/mps");
  }
  // In the node's container the host's driver is not at /: the control
  // program needs its libraries.
  if (mps.driver_root != "/" && !mps.driver_root.empty()) {
    const std::string& root = mps.driver_root;
    mps.extra_env.push_back(
        {"LD_LIBRARY_PATH", StrCat(root, "/usr/lib/x86_64-linux-gnu:", root,
                                   "/usr/lib/aarch64-linux-gnu:", root, "/usr/lib64")});
  }
  return std::make_unique<mps::MpsDaemons>(std::move(mps), parts.processes, RealClock());
}

}  // namespace

NodeDaemon::NodeDaemon(NodeDaemonOptions options, driver::NodeParts parts, kube::Client& client,
                       const Clock& clock)
    : options_(std::move(options)),
      parts_(parts),
      clock_(clock),
      prepares_(metrics_.Counter("k8shazgpu_node_claims_total",
                                 "Claims prepared and unprepared, by outcome.",
                                 {"operation", "result"})),
      published_devices_(metrics_.Gauge("k8shazgpu_node_published_devices",
                                        "Devices in this node's ResourceSlices.")),
      publish_errors_(metrics_.Counter("k8shazgpu_node_slice_publish_errors_total",
                                       "Failed attempts to publish the ResourceSlices.")),
      publishes_(metrics_.Counter("k8shazgpu_node_slice_publishes_total",
                                  "Publications that changed the ResourceSlices.")),
      claim_seconds_(metrics_.Histogram("k8shazgpu_node_claim_seconds",
                                        "Time to prepare or unprepare the claims of one call.",
                                        metrics::LatencyBuckets(), {"operation"})),
      recorder_(
          client,
          [&] {
            kube::EventReportingSource source;
            source.component = "k8shazgpu-node";
            source.host = parts.node_name;
            return source;
          }(),
          clock),
      events_(recorder_, options_.log),
      claims_(client),
      publisher_(client),
      status_writer_(client) {}

absl::StatusOr<std::unique_ptr<NodeDaemon>> NodeDaemon::Start(NodeDaemonOptions options,
                                                              driver::NodeParts parts,
                                                              kube::Client& client,
                                                              const Clock& clock) {
  std::unique_ptr<NodeDaemon> d(new NodeDaemon(std::move(options), parts, client, clock));
  std::string note, moved_to;
  // The checkpoint and dra.sock live here: the kubelet (root) needs in,
  // nobody else, whatever the umask.
  RETURN_IF_ERROR(MakeDirectories(d->options_.plugin_dir, kubeletplugin::kSocketDirMode));
  absl::StatusOr<driver::Checkpoint> checkpoint = driver::Checkpoint::Load(
      d->options_.plugin_dir, d->options_.boot_id, clock, &note, &moved_to);
  if (!checkpoint.ok()) return checkpoint.status();
  if (!note.empty()) d->options_.log.Warning(note);
  d->checkpoint_.emplace(*std::move(checkpoint));

  // The node's devices before anything asks for them.
  absl::StatusOr<nlohmann::json> node = client.Get(kube::kNodes, "", parts.node_name);
  std::string node_uid;
  if (node.ok()) {
    node_uid = node->value("/metadata/uid"_json_pointer, std::string());
  } else if (!kube::IsApiNotFound(node.status())) {
    d->options_.log.Warning(StrCat("cannot read node ", parts.node_name, ": ",
                                   node.status().message(),
                                   "; its slices are published without an owner"));
  }
  if (!moved_to.empty()) {
    kube::EventObjectReference about;
    about.api_version = "v1";
    about.kind = "Node";
    about.name = parts.node_name;
    about.uid = node_uid;
    d->events_.Post(about, kube::kEventWarning, kCheckpointCorrupted, note);
  }
  absl::StatusOr<driver::NodeView> view = driver::ReadNode(parts, node_uid);
  if (!view.ok()) return view.status();
  // Claims the kubelet asks for are usually in the cache by then.
  d->claims_.StartCache(parts.node_name);
  {
    MutexLock lock(d->mu_);
    d->node_uid_ = std::move(node_uid);
    d->devices_ = std::move(view->devices);
  }

  d->StartPreparer(client);

  d->metered_ = std::make_unique<MeteredNodeService>(
      *d->preparer_, d->prepares_, d->claim_seconds_, d->events_, d->clock_,
      [raw = d.get()] { raw->ReportClaimStatuses(); });
  absl::StatusOr<std::unique_ptr<kubeletplugin::PluginServer>> plugin =
      kubeletplugin::PluginServer::Start(
          {.registrar_dir = d->options_.registrar_dir,
           .plugin_dir = d->options_.plugin_dir,
           .on_registration_status =
               [log = d->options_.log](const kubeletplugin::RegistrationStatus& s) {
                 if (s.registered) {
                   log.Info("registered with the kubelet");
                 } else {
                   log.Error(StrCat("the kubelet refused the registration: ", s.error));
                 }
               },
           .log = d->options_.log},
          *d->metered_, &d->health_board_);
  if (!plugin.ok()) return plugin.status();
  d->plugin_ = *std::move(plugin);
  d->slice_thread_ = std::thread([raw = d.get()] { raw->SliceLoop(); });
  return d;
}

void NodeDaemon::StartPreparer(kube::Client& client) {
  if (parts_.sharing.enabled) mps_ = NewMpsDaemons(options_, parts_);
  preparer_ = std::make_unique<driver::ClaimPreparer>(
      driver::PreparerOptions{.driver = kubeletplugin::kDriverName,
                              .cdi_dir = options_.cdi_dir,
                              .toolkit_spec_dirs = options_.toolkit_spec_dirs,
                              .driver_root = options_.driver_root,
                              .mig_minors_path = options_.mig_minors_path,
                              .mps = mps_.get(),
                              .before_prepare_completed = options_.before_prepare_completed},
      claims_, [this] { return Devices(); }, parts_.store, *checkpoint_, clock_);
  for (const std::string& problem : preparer_->Restore()) options_.log.Warning(problem);
  claim_status_ = std::make_unique<driver::ClaimStatusReporter>(
      client,
      driver::ClaimStatusOptions{.driver = kubeletplugin::kDriverName,
                                 .pool = parts_.node_name,
                                 .retry = options_.resync,
                                 .log = options_.log},
      clock_);
  ReportClaimStatuses();  // after a restart: each prepared claim read once again
}

NodeDaemon::~NodeDaemon() { Stop(); }

void NodeDaemon::Stop() {
  if (stopping_.exchange(true)) return;
  if (slice_thread_.joinable()) slice_thread_.join();
  if (plugin_) plugin_->Shutdown();
  if (claim_status_) claim_status_->Stop();
  claims_.StopCache();
  events_.Stop();
}

driver::NodeDevices NodeDaemon::Devices() {
  MutexLock lock(mu_);
  return devices_;
}

void NodeDaemon::ReportClaimStatuses() {
  claim_status_->Set(driver::DesiredClaimStatuses(preparer_->CompletedClaims(), Devices(),
                                                  kubeletplugin::kDriverName));
}

void NodeDaemon::NoteDmemNotApplied(const driver::NodeDevices& devices) {
  if (dmem_note_logged_) return;
  std::vector<std::string> gpus;
  for (const auto& [name, shared] : devices.shared) {
    if (shared.dmem_not_applied) gpus.push_back(name);
  }
  if (gpus.empty()) return;
  dmem_note_logged_ = true;
  options_.log.Info(StrCat(
      "the host offers cgroup dmem limits (mps-dmem) for ", Join(gpus, ", "),
      ", but this node does not apply them to pods' shares (a pod's cgroup is not known when "
      "its claim is prepared): their shares are published and given as mps"));
}

void NodeDaemon::ReassertReservations(bool resync) {
  std::map<std::string, std::string> reported;
  for (const driver::LostReservation& lost : preparer_->ReassertReservations()) {
    const std::string claim = StrCat("claim ", lost.claim.namespace_name, "/", lost.claim.name,
                                     " (", lost.claim.uid, ")");
    if (!lost.restored.empty()) {
      std::vector<std::string> gpus;
      for (int gpu : lost.restored) gpus.push_back(StrCat(gpu));
      options_.log.Warning(StrCat(claim, ": the host store had lost its reservation of gpu ",
                                  Join(gpus, ", "), "; reserved again"));
    }
    const std::string& problem = lost.conflicts.empty() ? lost.error : lost.conflicts;
    if (problem.empty()) continue;
    reported[lost.claim.uid] = problem;
    // Said when new and at each resync while it lasts: loud, not every commit.
    auto seen = reported_problems_.find(lost.claim.uid);
    if (!resync && seen != reported_problems_.end() && seen->second == problem) continue;
    if (lost.conflicts.empty()) {
      options_.log.Warning(
          StrCat("cannot check the reservations of prepared ", claim, ": ", problem));
      continue;
    }
    const std::string message = StrCat(
        claim, " is prepared on this node, but its reservation cannot be put back: ", problem,
        "; the pod still runs on that GPU: release the other reservation, or delete the pod");
    options_.log.Error(message);
    events_.Post(ClaimObject(lost.claim), kube::kEventWarning, kReservationConflict, message);
  }
  reported_problems_ = std::move(reported);
}

void NodeDaemon::SyncSlices(bool verify) {
  // The store first agrees with the checkpoint, so that the slices follow.
  ReassertReservations(/*resync=*/verify);
  // A shared GPU's MPS daemon that died is started again at the resync.
  if (verify && mps_) {
    if (absl::Status s = mps_->Check(); !s.ok()) {
      options_.log.Warning(StrCat("MPS daemons: ", s.message()));
    }
  }
  std::string uid;
  {
    MutexLock lock(mu_);
    uid = node_uid_;
  }
  absl::StatusOr<driver::NodeView> view = driver::ReadNode(parts_, uid);
  if (!view.ok()) {
    publish_errors_.Add();
    options_.log.Warning(StrCat("cannot read the node's GPUs: ", view.status().message()));
    return;
  }
  const driver::NodeDevices* devices = &view->devices;
  NoteDmemNotApplied(*devices);
  if (parts_.health != nullptr) {
    std::vector<driver::DeviceHealth> health =
        driver::DeviceHealths(devices->pool, parts_.health->Snapshot());
    const int64_t now = ToEpochMillis(clock_.Now()) / 1000;
    // Sent again at every resync: without an update within its timeout the
    // kubelet shows a device as Unknown.
    const int64_t timeout =
        3 * std::chrono::duration_cast<std::chrono::seconds>(options_.resync).count();
    for (driver::DeviceHealth& h : health) {
      h.last_updated_unix = now;
      h.timeout_seconds = timeout;
    }
    health_board_.Set(std::move(health));
  }
  {
    MutexLock lock(mu_);
    devices_ = *devices;
  }
  // Claims' device status follows what is prepared; writes that failed are
  // tried again at the resync.
  ReportClaimStatuses();
  if (verify) claim_status_->RetryNow();
  // The node's status for people and the cluster CLI follows the slices,
  // debounced (WritePendingStatus): the slices are what the scheduler waits
  // for, and the client's 5 requests a second are shared.
  pending_status_ = driver::NodeGpuStatusObject(parts_.node_name, uid, *view, clock_.Now());
  absl::StatusOr<driver::PublishResult> published = publisher_.Publish(*devices, verify);
  if (!published.ok()) {
    publish_errors_.Add();
    options_.log.Warning(
        StrCat("cannot publish the ResourceSlices: ", published.status().message()));
    return;
  }
  for (const std::string& dropped : published->dropped) options_.log.Warning("left out " + dropped);
  published_devices_.Set(
      static_cast<double>(devices->pool.devices.size() - devices->withheld.size()));
  if (published->changed) {
    publishes_.Add();
    options_.log.Info(StrCat("published ", devices->pool.devices.size() - devices->withheld.size(),
                             " devices in ", published->slices, " slices (generation ",
                             published->generation, ")"));
  }
  ready_ = true;
}

// At most one NodeGpuStatus write a second; the last state always follows.
constexpr std::chrono::milliseconds kStatusInterval{1000};

void NodeDaemon::WritePendingStatus(bool now_anyway) {
  if (!pending_status_) return;
  const MonoTime now = clock_.MonoNow();
  if (!now_anyway && now < status_written_at_ + kStatusInterval) return;
  if (absl::Status s = status_writer_.Write(*pending_status_, /*refresh=*/now_anyway); !s.ok()) {
    options_.log.Warning(StrCat("cannot write the NodeGpuStatus: ", s.message()));
  }
  pending_status_.reset();
  status_written_at_ = now;
}

void NodeDaemon::SliceLoop() {
  absl::StatusOr<store::ChangeWatcher> watcher = store::ChangeWatcher::Watch(options_.state_path);
  if (!watcher.ok()) {
    options_.log.Warning(StrCat("cannot watch ", options_.state_path, " (",
                                watcher.status().message(), "); the slices follow it every ",
                                options_.resync.count() / 1000, " s"));
  }
  uint64_t health_seen = parts_.health != nullptr ? parts_.health->Snapshot().version : 0;
  auto next_resync = clock_.MonoNow();
  // A commit is seen (inotify on the WAL) a moment before readers can see it
  // (SQLite publishes it in the mmap'ed -shm index, which inotify does not
  // report): every wake is followed by a second look shortly after.
  constexpr MonoTime kNever = MonoTime::max();
  MonoTime settle = kNever;
  bool due = true;  // publish at once
  while (!stopping_) {
    const auto now = clock_.MonoNow();
    if (now >= settle) {
      due = true;
      settle = kNever;
    }
    if (due || now >= next_resync) {
      const bool resync = now >= next_resync;
      SyncSlices(/*verify=*/resync);
      WritePendingStatus(/*now_anyway=*/resync);
      next_resync = clock_.MonoNow() + options_.resync;
      due = false;
    } else {
      WritePendingStatus(/*now_anyway=*/false);
    }
    // Wake for a commit to the state file, a health change, the resync or
    // Stop(), checking the last two at least five times a second.
    const int wait_ms = settle != kNever ? 20 : 200;
    if (watcher.ok()) {
      pollfd fd{.fd = watcher->fd(), .events = POLLIN, .revents = 0};
      if (poll(&fd, 1, wait_ms) > 0 && watcher->Drain()) {
        due = true;
        settle = clock_.MonoNow() + std::chrono::milliseconds(50);
      }
    } else {
      clock_.SleepFor(std::chrono::milliseconds(wait_ms));
    }
    if (parts_.health != nullptr) {
      const uint64_t version = parts_.health->Snapshot().version;
      if (version != health_seen) {
        health_seen = version;
        due = true;
      }
    }
  }
}

}  // namespace canhazgpu::daemon
