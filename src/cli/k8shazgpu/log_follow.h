// Following a container's log across dropped streams without repeating or
// losing a line. The stream is read with timestamps (each line "TIME
// text"); after a drop it is read again from the start and every line up
// to the last one printed - by time, then by how many lines shared that
// time - is skipped. (pods/log's sinceTime would save the re-read, but
// kubelets round it to the second; skipping by time and count is exact.)
// LogResume is pure; FollowLogs does the I/O. Not thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "kube/client.h"

namespace canhazgpu::cli::k8s {

class LogResume {
 public:
  // Takes the next bytes of a stream; returns the complete new lines,
  // timestamps removed.
  std::string Feed(std::string_view chunk);
  // The stream ended: a last line without its newline, if any.
  std::string Flush();
  // A new stream of the same log starts from its beginning.
  void Restart();
  int64_t printed_lines() const { return printed_; }

 private:
  std::string Line(std::string_view line);

  std::string partial_;
  std::string last_time_;     // normalized time of the last printed line
  int64_t at_last_time_ = 0;  // printed lines with that time
  // In a re-read: lines seen so far at last_time_.
  int64_t seen_at_last_time_ = 0;
  bool replaying_ = false;
  int64_t printed_ = 0;
};

// "2026-11-24T07:30:01.5Z" -> a string that orders as the time does
// (fraction padded to nanoseconds); "" when `text` is no RFC 3339 time.
std::string OrderedTime(std::string_view text);

struct FollowOptions {
  std::string container;
  const std::atomic<bool>* cancel = nullptr;
  // Asked after a stream ends: true when the container has ended (the
  // log is complete), false to read on. Blocks until it knows.
  std::function<bool()> ended;
  int max_reconnects = 50;
};

// Streams the log into `out` until it is complete, `cancel` turns true, or
// it cannot be read (then the error).
absl::Status FollowLogs(kube::Client& client, const std::string& ns, const std::string& pod,
                        const FollowOptions& options,
                        const std::function<void(std::string_view)>& out);

}  // namespace canhazgpu::cli::k8s
