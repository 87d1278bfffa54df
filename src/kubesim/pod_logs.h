// What the simulated cluster's containers printed, served as pods/log: each
// container's output as timestamped lines, appended by whoever runs the
// container (a test, the simulated kubelet) and read with kubectl's options —
// tailLines, sinceSeconds, timestamps, and follow until the container ends.
// Thread-safe; followers wait on a condition variable, not a poll.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"

namespace canhazgpu::kubesim {

struct LogQuery {
  int64_t tail_lines = -1;    // -1: all
  int64_t since_seconds = 0;  // 0: from the start
  bool timestamps = false;    // prefix each line with its RFC 3339 time
};

// Where a reader is in one container's log.
struct LogCursor {
  bool positioned = false;  // the query's tail and since were applied
  size_t next_line = 0;
};

class PodLogs {
 public:
  explicit PodLogs(const Clock& clock) : clock_(clock) {}

  // The container's first run started: its log exists, empty, so that
  // pods/log answers "" (not "waiting to start") before it prints.
  void Start(const std::string& ns, const std::string& pod, const std::string& container);
  // Appends `text` to the container's log; a line without its final newline
  // is completed by the next Append. Starts the log if it had not started.
  void Append(const std::string& ns, const std::string& pod, const std::string& container,
              std::string_view text);
  // The container ended: followers get what is left, then the end.
  void Finish(const std::string& ns, const std::string& pod, const std::string& container);
  // The container runs again (a restart): its log starts over, as kubectl
  // logs shows the current run, and followers of the previous run end.
  void Restart(const std::string& ns, const std::string& pod, const std::string& container);
  // The pod is gone: its logs are dropped and followers end.
  void Forget(const std::string& ns, const std::string& pod);

  // Whether the container has started (anything appended or finished).
  bool Started(const std::string& ns, const std::string& pod, const std::string& container) const;

  // The lines `query` selects, from the cursor's position (the first call
  // applies tail_lines and since_seconds; later ones return what came
  // after). Waits up to `wait` when there is nothing new and the log is
  // still open. Returns nullopt once the log has ended (or was forgotten)
  // and everything was read.
  std::optional<std::string> Read(const std::string& ns, const std::string& pod,
                                  const std::string& container, const LogQuery& query,
                                  LogCursor& cursor, std::chrono::milliseconds wait);

  // Wakes every waiting reader (at shutdown).
  void WakeAll();

 private:
  struct Line {
    TimePoint time;
    std::string text;  // without the newline
  };
  struct Log {
    std::vector<Line> lines;
    std::string partial;  // an unfinished last line
    bool finished = false;
  };
  using Key = std::tuple<std::string, std::string, std::string>;

  std::string Render(const Log& log, size_t from, const LogQuery& query) const;

  const Clock& clock_;
  mutable Mutex mu_;
  std::condition_variable_any changed_;
  std::map<Key, Log> logs_ ABSL_GUARDED_BY(mu_);
  uint64_t wakeups_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace canhazgpu::kubesim
