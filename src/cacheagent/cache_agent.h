// The node cache agent inside k8shazgpu-node: keeps this node's caches
// equal to what the CachePlans ask of it. A control thread reads the plans
// and the node's labels (every `resync`, or at once on Resync()), decides
// which items apply here (scopes honoured), and queues the work that is due:
// new or changed items, refreshes asked for with `k8shazgpu cache update`,
// periodic refetches of branches and named model revisions, retries of
// failures with back-off. A pool of `workers` threads does the pulls, so a
// long pull never holds up another item, and the agent never shares a
// thread with the kubelet plugin (prepare is never blocked by a cache). A
// watch on the CachePlans makes an edited plan reach the node at once.
//
// The node's NodeCacheStatus is written while work progresses — a pull's
// bytes are visible while it runs — at most once per `status_interval`
// (debounced), and the CachePlans' status is recomputed from every node's
// report when an item changes state here. Folders no plan wants any more
// are deleted after `gc_grace`; over the disk ceiling, unwanted folders go
// first (longest unwanted first) and an item that would take the wanted
// ones over it fails with a message saying so.
//
// Threading: the public methods may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cacheagent/credential_policy.h"
#include "cacheagent/disk_budget.h"
#include "cacheagent/fetchers.h"
#include "cacheplan/types.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/mutex.h"
#include "cri/image_client.h"
#include "kube/client.h"
#include "metrics/registry.h"

namespace canhazgpu::cacheagent {

struct CacheAgentOptions {
  std::string node_name;
  std::filesystem::path cache_root = "/var/lib/canhazgpu/cache";
  int64_t disk_limit_bytes = 0;  // 0: no ceiling
  int workers = 2;
  std::string cri_socket;  // "": image items fail, saying the runtime is not configured
  std::string hf_endpoint = "https://huggingface.co";
  // Which Secrets plan items may name, and where their credentials may go.
  CredentialPolicy credentials;
  // file:// repositories (cacheplan::ItemRules): tests and simulated
  // clusters only.
  bool allow_local_git = false;
  Duration resync = std::chrono::seconds(30);
  Duration refetch = std::chrono::minutes(10);
  Duration retry = std::chrono::seconds(30);  // doubled per failure, up to `refetch`
  Duration gc_grace = std::chrono::hours(1);
  Duration status_interval = std::chrono::seconds(1);
  // A pull running longer fails (and is retried with back-off): a server
  // that trickles cannot hold a worker for ever.
  Duration pull_deadline = std::chrono::hours(6);
  // A git transfer moving fewer than this many bytes a second over
  // `low_speed_time` fails, as the Hugging Face downloads do.
  int64_t low_speed_bytes_per_second = 1;
  Duration low_speed_time = std::chrono::seconds(60);
  Log log;
};

class CacheAgent {
 public:
  // `client` and `clock` must outlive the agent. Fails only when the cache
  // root cannot be created.
  static absl::StatusOr<std::unique_ptr<CacheAgent>> Start(CacheAgentOptions options,
                                                           kube::Client& client,
                                                           const Clock& clock);
  ~CacheAgent();
  CacheAgent(const CacheAgent&) = delete;
  CacheAgent& operator=(const CacheAgent&) = delete;

  // Cancels pulls in flight and joins every thread.
  void Stop();
  // Reads the plans now instead of at the next resync.
  void Resync();
  // This node's report as it stands (what the next write sends).
  cacheplan::NodeCacheStatus Report() const;
  std::string Metrics() const { return metrics_.Render(); }

 private:
  using Key = std::pair<std::string, std::string>;  // plan, item
  struct Entry {
    cacheplan::CacheItem item;
    cacheplan::NodeItem report;
    uint64_t generation = 0;  // bumped when the item changes; stale results are dropped
    bool queued = false;
    bool running = false;
    bool refresh = false;                 // the queued run fetches again
    std::optional<TimePoint> started_at;  // of the pull running now
    bool past_deadline = false;           // it was stopped at pull_deadline
    std::string server;                   // SourceServer of the item
    std::optional<TimePoint> done_at;
    std::optional<TimePoint> failed_at;
    int failures = 0;
    std::string refresh_seen;  // the refreshRequestedAt already acted on
    std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  };

  // Items that apply to this node, by key, each with why the plan got it
  // wrong ("" when valid).
  using Desired = std::map<Key, std::pair<cacheplan::CacheItem, std::string>>;
  // What one pull works from, copied from its entry when it starts.
  struct Job {
    cacheplan::CacheItem item;
    uint64_t generation = 0;
    bool refresh = false;
    std::shared_ptr<std::atomic<bool>> cancel;
  };

  CacheAgent(CacheAgentOptions options, kube::Client& client, const Clock& clock);
  void ControlLoop();
  // Watches the CachePlans and resyncs on every change, so an edit reaches
  // the node at once rather than at the next periodic read.
  void WatchPlans();
  void WorkerLoop();
  // The first queued key whose server has a worker to spare (at most
  // workers - 1 pulls from one server, so one slow server never holds them
  // all); queue_.end() when none.
  std::deque<Key>::iterator NextStartable() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads plans and node; updates entries_; queues due work.
  absl::Status Reconcile() ABSL_LOCKS_EXCLUDED(mu_);
  // The plans' items that apply to a node of `labels`.
  Desired DesiredItems(const nlohmann::json& plans, const cacheplan::Labels& labels) const;
  // Stops and forgets the entries no plan wants here any more.
  void DropUnplannedLocked(const Desired& desired) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Creates or updates the entry of one desired item: a changed item starts
  // over, an invalid one fails, a pull past its deadline is stopped, and
  // due work is queued.
  void ReconcileEntryLocked(const Key& key, const cacheplan::CacheItem& item,
                            const std::string& invalid, TimePoint now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues a new item, an asked-for refresh, a retry after the backoff, or
  // the periodic refetch of an item that follows a branch.
  void QueueIfDueLocked(const Key& key, Entry& entry, bool added, TimePoint now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Notes since when each cache folder on disk has been unwanted.
  void TrackUnwantedFoldersLocked(const std::set<std::filesystem::path>& wanted, TimePoint now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Queue(const Key& key, Entry& entry, bool refresh) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pulls `key`, whose slot of `server` the caller took (running_by_server_)
  // under the same lock that chose it; gives the slot back.
  void Work(const Key& key, const std::string& server) ABSL_LOCKS_EXCLUDED(mu_);
  // Marks the entry Pulling and copies what the pull needs; nullopt (and the
  // slot given back) when the entry is gone.
  std::optional<Job> BeginWork(const Key& key, const std::string& server) ABSL_LOCKS_EXCLUDED(mu_);
  // Reads the pull secret and fetches, reporting progress; sets
  // `over_ceiling` (and cancels) when a download's size would pass the
  // node's ceiling.
  absl::StatusOr<FetchResult> FetchItem(const Key& key, const Job& job,
                                        const std::filesystem::path& folder, bool& over_ceiling)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Measures what a fetch left in `folder`; past the ceiling, deletes it and
  // returns ResourceExhausted.
  absl::Status CheckCeiling(const cacheplan::CacheItem& item, const std::filesystem::path& folder,
                            bool fetched, bool over_ceiling) ABSL_LOCKS_EXCLUDED(mu_);
  // Gives the server slot back and records the result on the entry, unless
  // the item changed meanwhile.
  void FinishWork(const Key& key, const Job& job, const std::string& server,
                  absl::StatusOr<FetchResult> result, double seconds) ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseServerSlot(const std::string& server) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<SecretData> ReadSecret(const cacheplan::CacheItem& item, absl::Status& error);
  // What a failed item fetched into a folder it created is deleted, unless
  // another item has the folder Ready or is fetching into it: nothing a
  // failed item brought stays readable.
  void RemoveFailedFolder(const Key& key, const std::filesystem::path& folder)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Scans the cache root; deletes what FoldersToRemove picks.
  void CollectGarbage() ABSL_LOCKS_EXCLUDED(mu_);
  // Folder list for the budget from folder_bytes_ and wanted_.
  std::vector<CacheFolder> FoldersLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetState(Entry& entry, const std::string& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  cacheplan::NodeCacheStatus ReportLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A Node's labels (metadata.labels), the string ones.
  static cacheplan::Labels LabelsOf(const nlohmann::json& node);
  // cache_agent_status.cc:
  absl::Status WriteStatus();
  // Every node's NodeCacheStatus (unreadable ones left out).
  absl::StatusOr<std::vector<cacheplan::NodeCacheStatus>> ReadReports();
  absl::Status WritePlanStatuses();

  const CacheAgentOptions options_;
  kube::Client& client_;
  const Clock& clock_;
  std::unique_ptr<cri::ImageClient> images_;

  metrics::MetricsRegistry metrics_;
  metrics::Metric& bytes_pulled_;
  metrics::Metric& items_by_state_;
  metrics::Metric& pull_seconds_;
  metrics::Metric& disk_used_;

  mutable Mutex mu_;
  std::condition_variable_any wake_;     // control thread
  std::condition_variable_any work_cv_;  // workers
  std::map<Key, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::deque<Key> queue_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> running_by_server_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> node_labels_ ABSL_GUARDED_BY(mu_);
  std::string node_uid_ ABSL_GUARDED_BY(mu_);
  // Cache folders (absolute paths) by size, and since when no item wants them.
  std::map<std::filesystem::path, int64_t> folder_bytes_ ABSL_GUARDED_BY(mu_);
  std::map<std::filesystem::path, TimePoint> unwanted_since_ ABSL_GUARDED_BY(mu_);
  bool resync_now_ ABSL_GUARDED_BY(mu_) = true;
  bool dirty_ ABSL_GUARDED_BY(mu_) = true;         // the report changed since it was written
  bool plans_dirty_ ABSL_GUARDED_BY(mu_) = false;  // an item changed state: recompute plan statuses
  std::atomic<bool> stopping_{false};
  std::thread control_;
  std::thread watcher_;
  std::vector<std::thread> workers_;

  // Control thread only.
  std::optional<cacheplan::NodeCacheStatus> written_;  // without last_update
  std::string written_version_;                        // its resourceVersion
  bool plans_pending_ = false;  // plan statuses to recompute after this report
};

}  // namespace canhazgpu::cacheagent
