// Stress test (CI) and throughput benchmark (bench/commands.sh) for the
// reserve / run / release / queue paths with real processes:
//
//   run_queue_stress CANHAZGPU WORKERS GPUS SECONDS
//
// WORKERS processes loop until SECONDS have passed, each step one of
//   - `reserve -g k --nonblock` then `release -G ids`,
//   - `reserve -g k --wait 3s` (queues behind others) then `release -G ids`,
//   - `reserve -G ids --wait 3s` for k random GPUs, then `release -G ids`,
//   - `reserve -g k --where <even GPUs> --wait 3s` (a selector waiter; it
//     must get even GPUs only), then `release -G ids`,
//   - `run -g k --wait 3s -- sh -c ...`, the job itself checking its GPUs,
// with k in 1..2: waiters for counts, ids and selectors mixed in the queue,
// where later ones take what earlier ones cannot use (backfill). Whoever holds GPU g owns the
// marker file gpu-g, created with O_EXCL (the job uses `set -C`): a GPU handed to two owners at
// once makes the second creation fail. After every step the worker also runs `PRAGMA
// integrity_check` on the state file. At the end, every GPU must be free, the queue empty, and no
// two finished reservations of a GPU in the history may overlap in time.
//
// Prints one line of counts and rates; exits 0 when nothing went wrong.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "command_runner.h"

namespace {

using canhazgpu::bench::RunCommand;
using SteadyClock = std::chrono::steady_clock;

struct Counts {
  long steps = 0;
  long granted = 0;     // steps that got their GPUs
  long violations = 0;  // a GPU with two owners, or a failed integrity check
  long unexpected = 0;  // a command exit status outside the allowed ones
};

std::vector<std::string> SplitIds(const std::string& csv) {
  std::vector<std::string> ids;
  size_t start = 0;
  while (start <= csv.size()) {
    size_t comma = csv.find(',', start);
    if (comma == std::string::npos) comma = csv.size();
    if (comma > start) ids.push_back(csv.substr(start, comma - start));
    start = comma + 1;
  }
  return ids;
}

// Takes the markers of `ids`; false if one is already taken (two owners).
bool TakeMarkers(const std::string& dir, const std::vector<std::string>& ids) {
  bool ok = true;
  for (const std::string& id : ids) {
    int fd = open((dir + "/gpu-" + id).c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd < 0) {
      ok = false;
    } else {
      close(fd);
    }
  }
  return ok;
}

void DropMarkers(const std::string& dir, const std::vector<std::string>& ids) {
  for (const std::string& id : ids) unlink((dir + "/gpu-" + id).c_str());
}

// Runs `sql`, returning the first column of every row as text ("" on error).
std::vector<std::string> Query(const std::string& db_path, const char* sql, bool* ok) {
  std::vector<std::string> rows;
  sqlite3* db = nullptr;
  *ok = sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK;
  if (*ok) {
    sqlite3_busy_timeout(db, 10'000);
    sqlite3_stmt* stmt = nullptr;
    *ok = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK;
    int rc = SQLITE_ROW;
    while (*ok && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt, 0);
      rows.emplace_back(text ? reinterpret_cast<const char*>(text) : "");
    }
    if (rc != SQLITE_DONE) *ok = false;
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return rows;
}

bool IntegrityOk(const std::string& db_path) {
  bool ok = false;
  std::vector<std::string> rows = Query(db_path, "PRAGMA integrity_check", &ok);
  return ok && rows.size() == 1 && rows[0] == "ok";
}

// What a reserve step asks for: a count, ids, or GPUs by what they are.
struct Ask {
  int count = 1;
  std::string ids;    // "-G": these GPUs
  bool even = false;  // "--where": even-numbered GPUs only
  bool wait = false;
};

constexpr char kEvenGpus[] = "device.attributes[\"gpu.canhazgpu.dev\"].index % 2 == 0";

// A reserve step: get the GPUs, own their markers, give them back.
void ReserveStep(const std::string& chg, const std::string& dir, const Ask& ask, Counts& c) {
  std::string ids;
  std::vector<std::string> args = {chg, "reserve", "--short"};
  if (!ask.ids.empty()) {
    args.insert(args.end(), {"-G", ask.ids});
  } else {
    args.insert(args.end(), {"-g", std::to_string(ask.count)});
  }
  if (ask.even) args.insert(args.end(), {"--where", kEvenGpus});
  if (ask.wait) {
    args.insert(args.end(), {"--wait", "3s"});
  } else {
    args.push_back("--nonblock");
  }
  int rc = RunCommand(args, &ids);
  if (rc == 3) return;  // none free now, or the wait ran out
  if (rc != 0) {
    ++c.unexpected;
    return;
  }
  ++c.granted;
  std::vector<std::string> list = SplitIds(ids);
  if (!ask.ids.empty() && ids != ask.ids) ++c.violations;  // not the GPUs asked for
  for (const std::string& id : list) {
    if (ask.even && std::stoi(id) % 2 != 0) ++c.violations;  // not what the selector matched
  }
  if (!TakeMarkers(dir, list)) ++c.violations;
  DropMarkers(dir, list);
  if (RunCommand({chg, "release", "-G", ids}) != 0) ++c.unexpected;
}

// A run step: the job checks its own GPUs (exit 20 if one had an owner).
void RunStep(const std::string& chg, const std::string& dir, int k, Counts& c) {
  std::string script =
      "set -C; ids=$(echo \"$CUDA_VISIBLE_DEVICES\" | tr , ' '); "
      "for g in $ids; do : > '" +
      dir + "'/gpu-$g || exit 20; done; for g in $ids; do rm -f '" + dir + "'/gpu-$g; done";
  int rc =
      RunCommand({chg, "run", "-g", std::to_string(k), "--wait", "3s", "--", "sh", "-c", script});
  if (rc == 0) {
    ++c.granted;
  } else if (rc == 20) {
    ++c.violations;
  } else if (rc != 3) {
    ++c.unexpected;
  }
}

// k distinct GPUs of `gpus`, ascending, as "1,3".
std::string RandomIds(std::mt19937& rng, int gpus, int k) {
  std::vector<int> all(static_cast<size_t>(gpus));
  for (int i = 0; i < gpus; ++i) all[static_cast<size_t>(i)] = i;
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(static_cast<size_t>(std::min(k, gpus)));
  std::sort(all.begin(), all.end());
  std::string out;
  for (int id : all) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

Counts Worker(const std::string& chg, const std::string& dir, const std::string& db, int gpus,
              int index, SteadyClock::time_point end) {
  Counts c;
  std::mt19937 rng(static_cast<unsigned>(index) * 7919u + 1);
  while (SteadyClock::now() < end) {
    int k = 1 + static_cast<int>(rng() % 2);
    switch (rng() % 5) {
      case 0:
        ReserveStep(chg, dir, {.count = k}, c);
        break;
      case 1:
        ReserveStep(chg, dir, {.count = k, .wait = true}, c);
        break;
      case 2:
        ReserveStep(chg, dir, {.ids = RandomIds(rng, gpus, k), .wait = true}, c);
        break;
      case 3:
        ReserveStep(chg, dir, {.count = std::min(k, (gpus + 1) / 2), .even = true, .wait = true},
                    c);
        break;
      default:
        RunStep(chg, dir, k, c);
        break;
    }
    ++c.steps;
    if (!IntegrityOk(db)) ++c.violations;
  }
  return c;
}

// Finished reservations of one GPU must not overlap: each starts at or
// after the end of the one before.
long OverlapsInHistory(const std::string& db) {
  bool ok = false;
  std::vector<std::string> rows =
      Query(db,
            "SELECT COUNT(*) FROM (SELECT start_ms, LAG(end_ms) OVER (PARTITION BY gpu ORDER BY "
            "start_ms, end_ms) AS prev_end FROM history WHERE reason != 'cancelled') "
            "WHERE prev_end IS NOT NULL AND start_ms < prev_end",
            &ok);
  return ok && rows.size() == 1 ? std::stol(rows[0]) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 || atoi(argv[2]) <= 0 || atoi(argv[3]) <= 0 || atoi(argv[4]) <= 0) {
    fprintf(stderr, "usage: run_queue_stress CANHAZGPU WORKERS GPUS SECONDS\n");
    return 2;
  }
  const std::string chg = argv[1];
  const int workers = atoi(argv[2]);
  const std::string gpus = argv[3];
  const int seconds = atoi(argv[4]);
  char tmpl[] = "/tmp/chg_stress.XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string db = dir + "/state.db";
  setenv("CANHAZGPU_STATE", db.c_str(), 1);
  if (RunCommand({chg, "admin", "--provider", "fake", "--gpus", gpus}) != 0) {
    fprintf(stderr, "admin failed\n");
    return 1;
  }

  int report[2];
  if (pipe(report) != 0) return 1;
  auto start = SteadyClock::now();
  auto end = start + std::chrono::seconds(seconds);
  std::vector<pid_t> pids;
  for (int w = 0; w < workers; ++w) {
    pid_t pid = fork();
    if (pid == 0) {
      close(report[0]);
      Counts c = Worker(chg, dir, db, atoi(gpus.c_str()), w, end);
      // One short write per worker: atomic on a pipe.
      dprintf(report[1], "%ld %ld %ld %ld\n", c.steps, c.granted, c.violations, c.unexpected);
      _exit(0);
    }
    pids.push_back(pid);
  }
  close(report[1]);
  Counts total;
  FILE* in = fdopen(report[0], "r");
  Counts c;
  while (fscanf(in, "%ld %ld %ld %ld", &c.steps, &c.granted, &c.violations, &c.unexpected) == 4) {
    total.steps += c.steps;
    total.granted += c.granted;
    total.violations += c.violations;
    total.unexpected += c.unexpected;
  }
  fclose(in);
  int crashed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++crashed;
    }
  }
  double elapsed = std::chrono::duration<double>(SteadyClock::now() - start).count();

  bool ok = false;
  long left_reserved = std::stol(Query(db, "SELECT COUNT(*) FROM reservations", &ok).at(0));
  long left_queued = std::stol(Query(db, "SELECT COUNT(*) FROM queue", &ok).at(0));
  long overlaps = OverlapsInHistory(db);
  bool integrity = IntegrityOk(db);
  printf(
      "%d workers, %s GPUs, %.1f s: %ld steps (%.0f/s), %ld granted (%.0f/s); "
      "%ld violations, %ld unexpected exits, %d crashed workers; afterwards %ld reserved, "
      "%ld queued, %ld overlapping history rows, integrity %s\n",
      workers, gpus.c_str(), elapsed, total.steps, total.steps / elapsed, total.granted,
      total.granted / elapsed, total.violations, total.unexpected, crashed, left_reserved,
      left_queued, overlaps, integrity ? "ok" : "FAILED");
  bool passed = total.violations == 0 && total.unexpected == 0 && crashed == 0 &&
                left_reserved == 0 && left_queued == 0 && overlaps == 0 && integrity &&
                total.granted > 0;
  std::filesystem::remove_all(dir);
  return passed ? 0 : 1;
}
