#include "cacheagent/cache_agent.h"

#include <algorithm>
#include <set>
#include <system_error>

#include "absl/strings/escaping.h"
#include "cacheplan/summary.h"
#include "cacheplan/validate.h"
#include "core/duration.h"
#include "core/strings.h"

namespace canhazgpu::cacheagent {
namespace {

using cacheplan::CacheItem;
using cacheplan::NodeItem;

std::string ItemLabel(const std::string& plan, const std::string& name) {
  return StrCat(plan, "/", name);
}

// The item with the field that only asks for a refresh cleared: a changed
// refreshRequestedAt is a refresh, not a new item.
CacheItem WithoutRefresh(CacheItem item) {
  item.refresh_requested_at.clear();
  return item;
}

// Items that pin an exact version need no periodic refetch.
bool Floats(const CacheItem& item) {
  if (item.type == cacheplan::kGitRepo) return item.git_repo && item.git_repo->commit.empty();
  if (item.type == cacheplan::kHfModel) {
    return item.hf_model &&
           !(item.hf_model->revision.size() == 40 &&
             item.hf_model->revision.find_first_not_of("0123456789abcdef") == std::string::npos);
  }
  return false;  // images: the runtime keeps a tag's image until asked again
}

}  // namespace

// A Node's labels (metadata.labels), the string ones.
cacheplan::Labels CacheAgent::LabelsOf(const nlohmann::json& node) {
  cacheplan::Labels labels;
  const nlohmann::json metadata = node.value("metadata", nlohmann::json::object());
  if (const auto& l = metadata.value("labels", nlohmann::json::object()); l.is_object()) {
    for (const auto& [k, v] : l.items()) {
      if (v.is_string()) labels[k] = v.get<std::string>();
    }
  }
  return labels;
}

absl::StatusOr<std::unique_ptr<CacheAgent>> CacheAgent::Start(CacheAgentOptions options,
                                                              kube::Client& client,
                                                              const Clock& clock) {
  std::error_code ec;
  for (const auto& dir : {GitRoot(options.cache_root), HfRoot(options.cache_root)}) {
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          StrCat("cannot create the cache folder ", dir.string(), ": ", ec.message()));
    }
  }
  if (options.workers < 1) options.workers = 1;
  std::unique_ptr<CacheAgent> agent(new CacheAgent(std::move(options), client, clock));
  agent->control_ = std::thread([a = agent.get()] { a->ControlLoop(); });
  agent->watcher_ = std::thread([a = agent.get()] { a->WatchPlans(); });
  for (int i = 0; i < agent->options_.workers; ++i) {
    agent->workers_.emplace_back([a = agent.get()] { a->WorkerLoop(); });
  }
  return agent;
}

CacheAgent::CacheAgent(CacheAgentOptions options, kube::Client& client, const Clock& clock)
    : options_(std::move(options)),
      client_(client),
      clock_(clock),
      images_(options_.cri_socket.empty()
                  ? nullptr
                  : std::make_unique<cri::ImageClient>(options_.cri_socket)),
      bytes_pulled_(metrics_.Counter("canhazgpu_cache_pulled_bytes_total",
                                     "Bytes brought to the node's caches, by item type.",
                                     {"type"})),
      items_by_state_(metrics_.Gauge("canhazgpu_cache_items",
                                     "Cache plan items on this node, by state.", {"state"})),
      pull_seconds_(metrics_.Histogram("canhazgpu_cache_pull_seconds",
                                       "Time to bring an item up to date, by item type.",
                                       metrics::LatencyBuckets(), {"type"})),
      disk_used_(metrics_.Gauge("canhazgpu_cache_disk_used_bytes",
                                "Bytes in the node's git and model caches.")) {}

CacheAgent::~CacheAgent() { Stop(); }

void CacheAgent::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_.exchange(true)) return;
    for (auto& [key, entry] : entries_) entry.cancel->store(true);
  }
  if (images_) images_->CancelPulls();
  wake_.notify_all();
  work_cv_.notify_all();
  if (control_.joinable()) control_.join();
  if (watcher_.joinable()) watcher_.join();
  for (std::thread& t : workers_) t.join();
}

void CacheAgent::Resync() {
  {
    MutexLock lock(mu_);
    resync_now_ = true;
  }
  wake_.notify_all();
}

cacheplan::NodeCacheStatus CacheAgent::Report() const {
  MutexLock lock(mu_);
  return ReportLocked();
}

cacheplan::NodeCacheStatus CacheAgent::ReportLocked() const {
  cacheplan::NodeCacheStatus status;
  status.node_name = options_.node_name;
  for (const auto& [key, entry] : entries_) status.items.push_back(entry.report);
  status.disk.limit_bytes = options_.disk_limit_bytes;
  for (const auto& [path, bytes] : folder_bytes_) status.disk.used_bytes += bytes;
  return status;
}

void CacheAgent::WatchPlans() {
  while (!stopping_) {
    kube::WatchOptions options;
    options.timeout_seconds = 300;
    options.cancel = &stopping_;
    absl::Status watched =
        client_.Watch(cacheplan::kCachePlans, "", options, [this](const kube::WatchEvent&) {
          Resync();
          return !stopping_;
        });
    if (stopping_) return;
    // A watch that failed (the CRD is missing, the server is away) is tried
    // again a little later; the periodic resync covers the gap.
    MutexLock lock(mu_);
    clock_.WaitFor(wake_, lock, watched.ok() ? std::chrono::seconds(0) : std::chrono::seconds(5),
                   [this] { return stopping_.load(); });
  }
}

void CacheAgent::ControlLoop() {
  MonoTime next_resync = clock_.MonoNow();
  MonoTime last_write{};
  while (!stopping_) {
    bool resync = false;
    {
      MutexLock lock(mu_);
      // The deadline moves as work reports progress, so it is recomputed on
      // every wake-up.
      while (!stopping_ && !resync_now_) {
        const MonoTime now = clock_.MonoNow();
        const bool pending = dirty_ || plans_dirty_;
        if (now >= next_resync || (pending && now >= last_write + options_.status_interval)) break;
        clock_.WaitUntil(
            wake_, lock,
            pending ? std::min(next_resync, last_write + options_.status_interval) : next_resync,
            [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
              return stopping_ || resync_now_ || (dirty_ || plans_dirty_) != pending;
            });
      }
      if (stopping_) return;
      resync = resync_now_ || clock_.MonoNow() >= next_resync;
      resync_now_ = false;
    }
    if (resync) {
      if (absl::Status s = Reconcile(); !s.ok())
        options_.log.Warning(StrCat("cache: ", s.message()));
      CollectGarbage();
      next_resync = clock_.MonoNow() + options_.resync;
    }
    bool write = false;
    {
      MutexLock lock(mu_);
      write = (dirty_ || plans_dirty_) && clock_.MonoNow() >= last_write + options_.status_interval;
    }
    if (write) {
      last_write = clock_.MonoNow();
      if (absl::Status s = WriteStatus(); !s.ok()) {
        options_.log.Warning(
            StrCat("cache: writing NodeCacheStatus ", options_.node_name, ": ", s.message()));
      } else if (absl::Status s = WritePlanStatuses(); !s.ok()) {
        options_.log.Warning(StrCat("cache: writing CachePlan status: ", s.message()));
      }
    }
  }
}

absl::Status CacheAgent::Reconcile() {
  absl::StatusOr<nlohmann::json> node = client_.Get(kube::kNodes, "", options_.node_name);
  if (!node.ok()) return node.status();
  absl::StatusOr<nlohmann::json> plans = client_.ListAll(cacheplan::kCachePlans, "");
  if (!plans.ok()) return plans.status();

  const cacheplan::Labels labels = LabelsOf(*node);
  const Desired desired = DesiredItems(*plans, labels);
  const TimePoint now = clock_.Now();
  MutexLock lock(mu_);
  node_labels_ = labels;
  node_uid_ = (*node)["metadata"].value("uid", "");
  DropUnplannedLocked(desired);
  std::set<std::filesystem::path> wanted;
  for (const auto& [key, want] : desired) {
    const CacheItem& item = want.first;
    if (auto folder = ItemFolder(options_.cache_root, item); !folder.empty()) wanted.insert(folder);
    ReconcileEntryLocked(key, item, want.second, now);
  }
  TrackUnwantedFoldersLocked(wanted, now);
  return absl::OkStatus();
}

CacheAgent::Desired CacheAgent::DesiredItems(const nlohmann::json& plans,
                                             const cacheplan::Labels& labels) const {
  // What applies here, with items a plan got wrong kept as failures.
  Desired desired;
  for (const nlohmann::json& object : plans["items"]) {
    absl::StatusOr<cacheplan::CachePlan> plan = cacheplan::PlanFromJson(object);
    if (!plan.ok()) continue;
    for (const CacheItem& item : plan->items) {
      if (!cacheplan::AppliesTo(item, labels)) continue;
      absl::Status valid =
          cacheplan::ValidateItem(item, {.allow_local_git = options_.allow_local_git});
      desired[{plan->name, item.name}] = {item, valid.ok() ? "" : std::string(valid.message())};
    }
  }
  return desired;
}

void CacheAgent::DropUnplannedLocked(const Desired& desired) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (desired.count(it->first) == 0) {
      it->second.cancel->store(true);
      options_.log.Info(StrCat("cache: ", ItemLabel(it->first.first, it->first.second),
                               " is no longer planned for this node"));
      it = entries_.erase(it);
      dirty_ = plans_dirty_ = true;
    } else {
      ++it;
    }
  }
}

void CacheAgent::ReconcileEntryLocked(const Key& key, const CacheItem& item,
                                      const std::string& invalid, TimePoint now) {
  auto [it, added] = entries_.try_emplace(key);
  Entry& entry = it->second;
  if (!added && WithoutRefresh(entry.item) != WithoutRefresh(item)) {
    // Changed: what is running fetches the old thing.
    entry.cancel->store(true);
    entry.cancel = std::make_shared<std::atomic<bool>>(false);
    ++entry.generation;
    entry.done_at.reset();
    entry.failed_at.reset();
    entry.failures = 0;
    added = true;
  }
  entry.item = item;
  entry.server = SourceServer(item, options_.hf_endpoint);
  if (added) {
    entry.report = NodeItem{};
    entry.report.plan = key.first;
    entry.report.name = key.second;
    entry.report.type = item.type;
    entry.refresh_seen = item.refresh_requested_at;
    SetState(entry, cacheplan::kPending);
    dirty_ = true;
  }
  if (!invalid.empty()) {
    // Once: every resync rewriting lastChecked would be a status write
    // per resync for nothing new.
    if (entry.report.state != cacheplan::kFailed || entry.report.message != invalid) {
      entry.report.message = invalid;
      SetState(entry, cacheplan::kFailed);
      entry.failed_at = now;
    }
    return;  // nothing to fetch until the plan is fixed
  }
  if (entry.running && entry.started_at && !entry.past_deadline &&
      now - *entry.started_at >= options_.pull_deadline) {
    entry.past_deadline = true;
    entry.cancel->store(true);
    options_.log.Warning(StrCat("cache: ", ItemLabel(key.first, key.second), " passed its ",
                                FormatDuration(options_.pull_deadline), " deadline; stopping it"));
  }
  if (entry.queued || entry.running) return;
  QueueIfDueLocked(key, entry, added, now);
}

void CacheAgent::QueueIfDueLocked(const Key& key, Entry& entry, bool added, TimePoint now) {
  const CacheItem& item = entry.item;
  if (added) {
    Queue(key, entry, false);
  } else if (item.refresh_requested_at != entry.refresh_seen) {
    entry.refresh_seen = item.refresh_requested_at;
    Queue(key, entry, true);
  } else if (entry.report.state == cacheplan::kFailed && entry.failed_at) {
    Duration backoff = options_.retry * (1 << std::min(entry.failures - 1, 10));
    if (now - *entry.failed_at >= std::min<Duration>(backoff, options_.refetch)) {
      Queue(key, entry, false);
    }
  } else if (entry.report.state == cacheplan::kReady && entry.done_at && Floats(item) &&
             now - *entry.done_at >= options_.refetch) {
    Queue(key, entry, true);
  }
}

void CacheAgent::TrackUnwantedFoldersLocked(const std::set<std::filesystem::path>& wanted,
                                            TimePoint now) {
  // Folders on disk, wanted or not (those of earlier runs of the agent too).
  std::set<std::filesystem::path> present;
  for (const auto& root : {GitRoot(options_.cache_root), HfRoot(options_.cache_root)}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
      std::string name = e.path().filename().string();
      if (name.empty() || name[0] == '.' || !e.is_directory()) continue;
      present.insert(e.path());
    }
  }
  for (const auto& path : present) {
    if (wanted.count(path) != 0) {
      unwanted_since_.erase(path);
    } else {
      unwanted_since_.try_emplace(path, now);
    }
  }
  for (auto it = unwanted_since_.begin(); it != unwanted_since_.end();) {
    it = present.count(it->first) ? std::next(it) : unwanted_since_.erase(it);
  }
}

void CacheAgent::Queue(const Key& key, Entry& entry, bool refresh) {
  entry.queued = true;
  entry.refresh = refresh;
  queue_.push_back(key);
  work_cv_.notify_one();
}

void CacheAgent::SetState(Entry& entry, const std::string& state) {
  if (entry.report.state != state) plans_dirty_ = true;
  entry.report.state = state;
  entry.report.last_checked = FormatTimestampSeconds(clock_.Now());
  dirty_ = true;
}

std::deque<CacheAgent::Key>::iterator CacheAgent::NextStartable() {
  const int per_server = std::max(1, options_.workers - 1);
  return std::find_if(queue_.begin(), queue_.end(),
                      [&](const Key& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                        auto entry = entries_.find(key);
                        if (entry == entries_.end()) return true;  // Work drops it at once
                        auto running = running_by_server_.find(entry->second.server);
                        return running == running_by_server_.end() || running->second < per_server;
                      });
}

void CacheAgent::ReleaseServerSlot(const std::string& server) {
  if (auto running = running_by_server_.find(server);
      running != running_by_server_.end() && --running->second <= 0) {
    running_by_server_.erase(running);
  }
}

void CacheAgent::WorkerLoop() {
  while (true) {
    Key key;
    std::string server;
    {
      MutexLock lock(mu_);
      work_cv_.wait(lock, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || NextStartable() != queue_.end();
      });
      if (stopping_) return;
      auto next = NextStartable();
      key = *next;
      queue_.erase(next);
      // The server's slot is taken under the lock that found it free: taken
      // later, another worker could pick a second item of a slow server in
      // between, and both workers would hang on it.
      if (auto entry = entries_.find(key); entry != entries_.end()) server = entry->second.server;
      ++running_by_server_[server];
    }
    Work(key, server);
    // A server's slot is free again: a waiting item of it may start.
    work_cv_.notify_all();
  }
}

std::optional<SecretData> CacheAgent::ReadSecret(const CacheItem& item, absl::Status& error) {
  if (!item.pull_secret) return std::nullopt;
  const auto& ref = *item.pull_secret;
  // Before the read: the agent may be able to read Secrets elsewhere (an
  // older RBAC), and a plan must not be the way to them.
  if (absl::Status allowed = CheckSecretNamespace(ref, options_.credentials); !allowed.ok()) {
    error = allowed;
    return std::nullopt;
  }
  absl::StatusOr<nlohmann::json> secret = client_.Get(kube::kSecrets, ref.namespace_name, ref.name);
  if (!secret.ok()) {
    error = absl::Status(secret.status().code(), StrCat("reading secret ", ref.namespace_name, "/",
                                                        ref.name, ": ", secret.status().message()));
    return std::nullopt;
  }
  SecretData out;
  absl::StatusOr<std::vector<std::string>> hosts =
      CredentialHosts(StrCat(ref.namespace_name, "/", ref.name), *secret);
  if (!hosts.ok()) {
    error = hosts.status();
    return std::nullopt;
  }
  out.hosts = *std::move(hosts);
  out.type = secret->value("type", "");
  if (const auto& data = secret->value("data", nlohmann::json::object()); data.is_object()) {
    for (const auto& [k, v] : data.items()) {
      std::string decoded;
      if (!v.is_string() || !absl::Base64Unescape(v.get<std::string>(), &decoded)) {
        error = absl::InvalidArgumentError(
            StrCat("secret ", ref.namespace_name, "/", ref.name, " key ", k, " is not base64"));
        return std::nullopt;
      }
      out.data[k] = std::move(decoded);
    }
  }
  return out;
}

void CacheAgent::Work(const Key& key, const std::string& server) {
  std::optional<Job> job = BeginWork(key, server);
  if (!job) return;
  wake_.notify_all();
  const MonoTime started = clock_.MonoNow();
  const std::filesystem::path folder = ItemFolder(options_.cache_root, job->item);
  std::error_code exists_error;
  const bool folder_was_there =
      !folder.empty() && std::filesystem::exists(folder, exists_error) && !exists_error;

  bool over_ceiling = false;
  absl::StatusOr<FetchResult> result = FetchItem(key, *job, folder, over_ceiling);
  const double seconds = std::chrono::duration<double>(clock_.MonoNow() - started).count();
  if (absl::Status ceiling = CheckCeiling(job->item, folder, result.ok(), over_ceiling);
      !ceiling.ok()) {
    result = ceiling;
  }
  if (!result.ok() && !folder_was_there && !stopping_) RemoveFailedFolder(key, folder);
  FinishWork(key, *job, server, std::move(result), seconds);
}

std::optional<CacheAgent::Job> CacheAgent::BeginWork(const Key& key, const std::string& server) {
  MutexLock lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ReleaseServerSlot(server);
    return std::nullopt;
  }
  Entry& entry = it->second;
  entry.queued = false;
  entry.running = true;
  entry.started_at = clock_.Now();
  Job job{.item = entry.item,
          .generation = entry.generation,
          .refresh = entry.refresh,
          .cancel = entry.cancel};
  entry.report.bytes_done = 0;
  entry.report.bytes_total = 0;
  entry.report.message.clear();
  SetState(entry, cacheplan::kPulling);
  return job;
}

absl::StatusOr<FetchResult> CacheAgent::FetchItem(const Key& key, const Job& job,
                                                  const std::filesystem::path& folder,
                                                  bool& over_ceiling) {
  absl::Status secret_error;
  std::optional<SecretData> secret = ReadSecret(job.item, secret_error);
  if (!secret_error.ok()) return secret_error;
  FetchRequest request;
  request.item = &job.item;
  request.cache_root = options_.cache_root;
  request.clock = &clock_;
  request.images = images_.get();
  request.hf_endpoint = options_.hf_endpoint;
  request.secret = std::move(secret);
  request.credentials = options_.credentials;
  request.refresh = job.refresh;
  request.cancel = job.cancel.get();
  request.git_limits.low_speed_bytes_per_second = options_.low_speed_bytes_per_second;
  request.git_limits.low_speed_time =
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.low_speed_time);
  request.progress = [&](int64_t done, int64_t total) {
    MutexLock lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.generation != job.generation) return;
    it->second.report.bytes_done = done;
    it->second.report.bytes_total = total;
    if (!dirty_) wake_.notify_all();
    dirty_ = true;
    // A download that says its size up front is stopped before it fills
    // the disk past the ceiling.
    if (total > 0 && !over_ceiling) {
      std::vector<CacheFolder> others = FoldersLocked();
      std::erase_if(others, [&](const CacheFolder& f) { return f.path == folder; });
      if (OverCeiling(others, total, options_.disk_limit_bytes)) {
        over_ceiling = true;
        job.cancel->store(true);
      }
    }
  };
  return Fetch(request);
}

absl::Status CacheAgent::CheckCeiling(const CacheItem& item, const std::filesystem::path& folder,
                                      bool fetched, bool over_ceiling) {
  if (fetched && !folder.empty()) {
    int64_t bytes = FolderBytes(folder);
    MutexLock lock(mu_);
    folder_bytes_[folder] = bytes;
    std::vector<CacheFolder> folders = FoldersLocked();
    if (OverCeiling(folders, 0, options_.disk_limit_bytes)) over_ceiling = true;
  }
  if (!over_ceiling) return absl::OkStatus();
  if (!folder.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(folder, ec);
    MutexLock lock(mu_);
    folder_bytes_.erase(folder);
  }
  return absl::ResourceExhaustedError(StrCat(
      "the node's cache ceiling of ", options_.disk_limit_bytes, " bytes would be exceeded by ",
      item.name, "; remove items from the plans or raise k8shazgpu-node --cache-disk-limit"));
}

void CacheAgent::FinishWork(const Key& key, const Job& job, const std::string& server,
                            absl::StatusOr<FetchResult> result, double seconds) {
  MutexLock lock(mu_);
  ReleaseServerSlot(server);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.generation != job.generation) return;
  Entry& entry = it->second;
  entry.running = false;
  entry.started_at.reset();
  if (entry.past_deadline) {
    entry.past_deadline = false;
    entry.cancel = std::make_shared<std::atomic<bool>>(false);  // for the retry
    if (!result.ok()) {
      result = absl::DeadlineExceededError(
          StrCat("pulling ", job.item.name, " took longer than ",
                 FormatDurationShort(options_.pull_deadline),
                 " and was stopped (k8shazgpu-node --cache-pull-deadline); last: ",
                 result.status().message()));
    }
  }
  if (result.ok()) {
    entry.report.digest = result->digest;
    entry.report.commit = result->commit;
    entry.report.revision = result->revision;
    entry.report.size_bytes = result->size_bytes;
    entry.report.bytes_done = result->size_bytes;
    entry.report.bytes_total = result->size_bytes;
    entry.done_at = clock_.Now();
    entry.failures = 0;
    SetState(entry, cacheplan::kReady);
    bytes_pulled_.Add(static_cast<double>(result->bytes_pulled), {job.item.type});
    pull_seconds_.Observe(seconds, {job.item.type});
  } else if (stopping_) {
    return;
  } else {
    entry.report.message = std::string(result.status().message());
    entry.failed_at = clock_.Now();
    ++entry.failures;
    SetState(entry, cacheplan::kFailed);
    options_.log.Warning(
        StrCat("cache: ", ItemLabel(key.first, key.second), " failed: ", entry.report.message));
  }
  wake_.notify_all();
}

void CacheAgent::RemoveFailedFolder(const Key& key, const std::filesystem::path& folder) {
  if (folder.empty()) return;
  MutexLock lock(mu_);
  for (const auto& [other_key, other] : entries_) {
    if (other_key == key || ItemFolder(options_.cache_root, other.item) != folder) continue;
    // Another item of the same repository or model fetched it, or is
    // fetching it now: the bytes are that item's.
    if (other.running || other.report.state == cacheplan::kReady) return;
  }
  std::error_code ec;
  std::filesystem::remove_all(folder, ec);
  folder_bytes_.erase(folder);
  if (ec) {
    options_.log.Warning(StrCat("cache: cannot remove ", folder.string(), " after ",
                                ItemLabel(key.first, key.second), " failed: ", ec.message()));
  }
}

std::vector<CacheFolder> CacheAgent::FoldersLocked() const {
  std::vector<CacheFolder> out;
  for (const auto& [path, bytes] : folder_bytes_) {
    CacheFolder f{.path = path, .bytes = bytes, .unwanted_since = std::nullopt};
    if (auto it = unwanted_since_.find(path); it != unwanted_since_.end()) {
      f.unwanted_since = it->second;
    }
    out.push_back(std::move(f));
  }
  return out;
}

void CacheAgent::CollectGarbage() {
  std::vector<std::filesystem::path> paths;
  {
    MutexLock lock(mu_);
    for (const auto& [path, since] : unwanted_since_) paths.push_back(path);
    for (const auto& [key, entry] : entries_) {
      if (auto f = ItemFolder(options_.cache_root, entry.item); !f.empty() && !entry.running) {
        paths.push_back(f);
      }
    }
  }
  // Sizes outside the lock: walking a model folder takes a while.
  std::map<std::filesystem::path, int64_t> sizes;
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) sizes[p] = FolderBytes(p);
  }
  std::vector<std::filesystem::path> remove;
  {
    MutexLock lock(mu_);
    for (auto& [p, bytes] : sizes) folder_bytes_[p] = bytes;
    remove = FoldersToRemove(FoldersLocked(), options_.disk_limit_bytes, options_.gc_grace,
                             clock_.Now());
  }
  for (const auto& p : remove) {
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
    if (ec) {
      options_.log.Warning(StrCat("cache: cannot remove ", p.string(), ": ", ec.message()));
    } else {
      options_.log.Info(StrCat("cache: removed ", p.string(), " (no plan wants it)"));
    }
    MutexLock lock(mu_);
    if (!ec) {
      folder_bytes_.erase(p);
      unwanted_since_.erase(p);
    }
    dirty_ = true;
  }
  MutexLock lock(mu_);
  for (auto it = folder_bytes_.begin(); it != folder_bytes_.end();) {
    std::error_code ec;
    it = std::filesystem::exists(it->first, ec) ? std::next(it) : folder_bytes_.erase(it);
  }
}

}  // namespace canhazgpu::cacheagent
