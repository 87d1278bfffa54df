#include "cli/canhazgpu/web_demo.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "alloc/report.h"
#include "core/file_write.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "gpu/fake_host.h"
// The demo's processes are simulated the way the tests simulate them: a
// map of pids, so the demo shows owners and models without running anything.
#include "host/testing/fake_process_table.h"

namespace canhazgpu::cli {
namespace {

using Json = nlohmann::ordered_json;
using std::chrono::hours;
using std::chrono::minutes;

constexpr int kGpus = 8;
constexpr int kHistoryDays = 30;

struct DemoUser {
  uint32_t uid;
  const char* name;
  int weight;  // how often they reserve, relative to the others
};
constexpr DemoUser kUsers[] = {{2001, "alice", 5}, {2002, "bob", 3},  {2003, "carol", 3},
                               {2004, "dave", 2},  {2005, "erin", 2}, {2006, "frank", 1}};

const DemoUser& User(const char* name) {
  for (const DemoUser& u : kUsers) {
    if (std::string_view(u.name) == name) return u;
  }
  return kUsers[0];
}

host::ProcessInfo Process(int64_t pid, const char* user, std::vector<std::string> argv) {
  return {.pid = pid,
          .ppid = 1,
          .pgid = pid,
          .uid = User(user).uid,
          .start_ticks = static_cast<uint64_t>(pid) * 10,
          .state = 'S',
          .argv = std::move(argv)};
}

ProcessRef Ref(const host::ProcessInfo& p) { return {p.pid, p.start_ticks}; }

// GPU processes: alice trains on 0 and 1, carol serves a model on 3, and
// dave evaluates on 4 without a reservation. Two queue waiters.
struct DemoProcesses {
  host::ProcessInfo train =
      Process(4101, "alice", {"python", "train.py", "--model", "meta-llama/Llama-3.1-8B-Instruct"});
  host::ProcessInfo serve = Process(
      4201, "carol", {"vllm", "serve", "Qwen/Qwen2.5-72B-Instruct", "--tensor-parallel-size", "1"});
  host::ProcessInfo eval =
      Process(4301, "dave", {"python", "eval.py", "--model", "mistralai/Mistral-7B-Instruct-v0.3"});
  host::ProcessInfo erin_waits =
      Process(4401, "erin", {"canhazgpu", "reserve", "--gpu-ids", "0,1", "--duration", "2h"});
  host::ProcessInfo frank_waits =
      Process(4501, "frank", {"canhazgpu", "run", "--gpu-ids", "3", "--", "python", "bench.py"});
};

std::string FakeHostJson(const DemoProcesses& p) {
  Json host = Json::parse(gpu::DefaultFakeHostJson(kGpus));
  auto uses = [&](int gpu, int64_t pid, int mib) {
    host["gpus"][gpu]["processes"].push_back({{"pid", pid}, {"used_memory_mib", mib}});
  };
  uses(0, p.train.pid, 61440);
  uses(1, p.train.pid, 59392);
  uses(3, p.serve.pid, 73728);
  uses(4, p.eval.pid, 18432);
  host["gpus"][5]["memory_reserved_mib"] = 40960;  // a Kubernetes pod's, not visible here
  return host.dump(2) + "\n";
}

// The GPUs in use now. Each starts after the GPU's history ends.
std::vector<Reservation> LiveReservations(const DemoProcesses& p, TimePoint now) {
  std::vector<Reservation> out;
  for (int gpu : {0, 1}) {
    out.push_back({.gpu = gpu,
                   .uid = User("alice").uid,
                   .user = "alice",
                   .kind = ReservationKind::kRun,
                   .start = now - hours(3) - minutes(12),
                   .process = Ref(p.train),
                   .command = Join(p.train.argv, " ")});
  }
  out.push_back({.gpu = 2,
                 .uid = User("bob").uid,
                 .user = "bob",
                 .kind = ReservationKind::kManual,
                 .start = now - minutes(40),
                 .expires = now + hours(1) + minutes(20),
                 .note = "debugging an NCCL hang"});
  out.push_back({.gpu = 3,
                 .uid = User("carol").uid,
                 .user = "carol",
                 .kind = ReservationKind::kRun,
                 .start = now - hours(2 * 24 + 5),
                 .process = Ref(p.serve),
                 .note = "team endpoint, ask before stopping",
                 .command = Join(p.serve.argv, " ")});
  out.push_back({.gpu = 5,
                 .uid = User("erin").uid,
                 .user = "erin",
                 .kind = ReservationKind::kK8s,
                 .start = now - hours(6),
                 .claim = KubeClaimRef{.namespace_name = "ml-team",
                                       .name = "trainer-gpu",
                                       .uid = "demo-claim-0001",
                                       .pod = "trainer-0"}});
  return out;
}

std::vector<QueueEntry> Queue(const DemoProcesses& p, TimePoint now) {
  return {{.uid = User("erin").uid,
           .user = "erin",
           .kind = ReservationKind::kManual,
           .count = 2,
           .ids = {0, 1},
           .duration = hours(2),
           .note = "eval sweep",
           .waiter = Ref(p.erin_waits),
           .enqueued = now - minutes(7)},
          {.uid = User("frank").uid,
           .user = "frank",
           .kind = ReservationKind::kRun,
           .count = 1,
           .ids = {3},
           .command = "python bench.py",
           .waiter = Ref(p.frank_waits),
           .enqueued = now - minutes(2)}};
}

// A month of reservations, one after another on each GPU with gaps, and
// the usage samples canhazgpu would have taken meanwhile. Seeded, so every
// demo shows the same month.
void History(TimePoint now, const std::vector<Reservation>& live,
             std::vector<HistoryRecord>* records, std::vector<UsageSample>* samples) {
  std::mt19937 rng(19);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  std::vector<int> weights;
  for (const DemoUser& u : kUsers) weights.push_back(u.weight);
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  auto span = [](double h) {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::ratio<3600>>(h));
  };
  for (int gpu = 0; gpu < kGpus; ++gpu) {
    TimePoint until = now - hours(1);
    for (const Reservation& r : live) {
      if (r.gpu == gpu) until = std::min(until, r.start - minutes(5));
    }
    TimePoint t = now - hours(24 * kHistoryDays);
    while (true) {
      const TimePoint start = t + span(uniform(0.5, 16));
      const TimePoint end = start + span(uniform(0.5, 14));
      if (end > until) break;
      const DemoUser& user = kUsers[pick(rng)];
      HistoryRecord record{
          .gpu = gpu, .uid = user.uid, .user = user.name, .start = start, .end = end};
      const double kind = uniform(0, 1);
      double busy_share = 0.45;
      if (gpu == 5 && kind < 0.4) {
        record.kind = ReservationKind::kK8s;
        record.uid = User("erin").uid;
        record.user = "erin";
        record.note = "claim ml-team/trainer-gpu (pod trainer-0)";
        busy_share = 0.9;
      } else if (kind < 0.6) {
        record.kind = ReservationKind::kRun;
        record.reason = ReleaseReason::kJobExited;
        busy_share = 0.85;
      } else {
        record.reason = uniform(0, 1) < 0.3 ? ReleaseReason::kExpired : ReleaseReason::kReleased;
      }
      records->push_back(record);
      for (TimePoint at = start; at < end; at += alloc::kSampleSpan) {
        const bool busy = uniform(0, 1) < busy_share;
        const double gib = busy ? uniform(20, 76) : uniform(0, 0.5);
        samples->push_back({.gpu = gpu,
                            .at = at,
                            .memory_used_bytes = static_cast<uint64_t>(gib * 1024) * kMiB,
                            .busy = busy});
      }
      t = end;
    }
  }
  std::sort(records->begin(), records->end(),
            [](const HistoryRecord& a, const HistoryRecord& b) { return a.end < b.end; });
}

}  // namespace

absl::StatusOr<std::unique_ptr<DemoHost>> DemoHost::Create(const Clock& clock,
                                                           const OpenStore& open_store) {
  std::unique_ptr<DemoHost> demo(new DemoHost());
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/canhazgpu-demo-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::UnavailableError(
        StrCat("cannot create a directory for the demo (", pattern, "): ", std::strerror(errno)));
  }
  demo->dir_ = pattern;  // removed by ~DemoHost from here on

  auto processes = std::make_unique<host::FakeProcessTable>();
  const DemoProcesses demo_processes;
  for (const host::ProcessInfo& p :
       {demo_processes.train, demo_processes.serve, demo_processes.eval, demo_processes.erin_waits,
        demo_processes.frank_waits}) {
    processes->Add(p);
  }
  for (const DemoUser& u : kUsers) processes->AddUser(u.uid, u.name);
  demo->processes_ = std::move(processes);
  demo->machine_ = std::make_unique<alloc::Machine>(alloc::Machine{clock, *demo->processes_});

  const PoolConfig pool{kGpus, "fake", demo->dir_ + "/fake-host.json"};
  RETURN_IF_ERROR(WriteFileAtomically(pool.fake_host, FakeHostJson(demo_processes), 0644));
  ASSIGN_OR_RETURN(std::unique_ptr<store::StateStore> store,
                   open_store(demo->dir_ + "/state.db", /*create=*/true));
  demo->store_ = std::move(store);
  RETURN_IF_ERROR(alloc::InitializePool(*demo->store_, pool, false, *demo->machine_));

  const TimePoint now = clock.Now();
  const std::vector<Reservation> live = LiveReservations(demo_processes, now);
  std::vector<HistoryRecord> records;
  std::vector<UsageSample> samples;
  History(now, live, &records, &samples);
  RETURN_IF_ERROR(demo->store_->Update([&](store::StateTransaction& txn) -> absl::Status {
    for (const Reservation& r : live) RETURN_IF_ERROR(txn.InsertReservation(r));
    for (const QueueEntry& e : Queue(demo_processes, now))
      RETURN_IF_ERROR(txn.InsertQueueEntry(e).status());
    for (const HistoryRecord& h : records) RETURN_IF_ERROR(txn.AppendHistory(h));
    return txn.AppendUsageSamples(samples, now - alloc::kSampleRetention);
  }));
  return demo;
}

DemoHost::~DemoHost() {
  store_.reset();  // closes the state file before it goes
  if (dir_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

nlohmann::ordered_json DemoHost::RemoteHosts() {
  return Json::array(
      {{{"host", "gpu-node-2"},
        {"summary",
         {{"gpus", 4},
          {"available", 1},
          {"in_use", 3},
          {"unreserved", 0},
          {"error", 0},
          {"waiting", 0},
          {"products", "4× NVIDIA A100-SXM4-80GB"}}}},
       {{"host", "gpu-node-3"},
        {"error", "ssh: connect to host gpu-node-3 port 22: Connection timed out"}}});
}

}  // namespace canhazgpu::cli
