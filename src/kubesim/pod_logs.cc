#include "kubesim/pod_logs.h"

#include <algorithm>

#include "core/duration.h"

namespace canhazgpu::kubesim {

void PodLogs::Append(const std::string& ns, const std::string& pod, const std::string& container,
                     std::string_view text) {
  MutexLock lock(mu_);
  Log& log = logs_[{ns, pod, container}];
  if (log.finished) return;  // a container that ended prints nothing more
  const TimePoint now = clock_.Now();
  size_t start = 0;
  for (size_t newline; (newline = text.find('\n', start)) != std::string_view::npos;
       start = newline + 1) {
    log.partial.append(text.substr(start, newline - start));
    log.lines.push_back({now, std::move(log.partial)});
    log.partial.clear();
  }
  log.partial.append(text.substr(start));
  ++wakeups_;
  changed_.notify_all();
}

void PodLogs::Start(const std::string& ns, const std::string& pod, const std::string& container) {
  MutexLock lock(mu_);
  logs_.try_emplace({ns, pod, container});
  ++wakeups_;
  changed_.notify_all();
}

void PodLogs::Finish(const std::string& ns, const std::string& pod, const std::string& container) {
  MutexLock lock(mu_);
  Log& log = logs_[{ns, pod, container}];
  if (!log.partial.empty()) {
    log.lines.push_back({clock_.Now(), std::move(log.partial)});
    log.partial.clear();
  }
  log.finished = true;
  ++wakeups_;
  changed_.notify_all();
}

void PodLogs::Restart(const std::string& ns, const std::string& pod, const std::string& container) {
  MutexLock lock(mu_);
  logs_.erase({ns, pod, container});
  ++wakeups_;
  changed_.notify_all();
}

void PodLogs::Forget(const std::string& ns, const std::string& pod) {
  MutexLock lock(mu_);
  for (auto it = logs_.lower_bound({ns, pod, ""});
       it != logs_.end() && std::get<0>(it->first) == ns && std::get<1>(it->first) == pod;) {
    it = logs_.erase(it);
  }
  ++wakeups_;
  changed_.notify_all();
}

bool PodLogs::Started(const std::string& ns, const std::string& pod,
                      const std::string& container) const {
  MutexLock lock(mu_);
  return logs_.count({ns, pod, container}) > 0;
}

void PodLogs::WakeAll() {
  MutexLock lock(mu_);
  ++wakeups_;
  changed_.notify_all();
}

std::string PodLogs::Render(const Log& log, size_t from, const LogQuery& query) const {
  std::string out;
  for (size_t i = from; i < log.lines.size(); ++i) {
    if (query.timestamps) out += FormatTimestamp(log.lines[i].time) + " ";
    out += log.lines[i].text;
    out += '\n';
  }
  return out;
}

std::optional<std::string> PodLogs::Read(const std::string& ns, const std::string& pod,
                                         const std::string& container, const LogQuery& query,
                                         LogCursor& cursor, std::chrono::milliseconds wait) {
  MutexLock lock(mu_);
  const Key key{ns, pod, container};
  auto it = logs_.find(key);
  if (it == logs_.end()) return std::nullopt;
  if (!cursor.positioned) {
    cursor.positioned = true;
    const std::vector<Line>& lines = it->second.lines;
    size_t first = 0;
    if (query.since_seconds > 0) {
      const TimePoint since = clock_.Now() - std::chrono::seconds(query.since_seconds);
      first = static_cast<size_t>(
          std::find_if(lines.begin(), lines.end(), [&](const Line& l) { return l.time >= since; }) -
          lines.begin());
    }
    if (query.tail_lines >= 0) {
      first = std::max(
          first, lines.size() - std::min(lines.size(), static_cast<size_t>(query.tail_lines)));
    }
    cursor.next_line = first;
  }
  if (cursor.next_line >= it->second.lines.size() && !it->second.finished) {
    const uint64_t seen = wakeups_;
    changed_.wait_for(lock, wait,
                      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return wakeups_ != seen; });
    it = logs_.find(key);  // Forget may have erased it while we waited
    if (it == logs_.end()) return std::nullopt;
  }
  const Log& log = it->second;
  if (cursor.next_line >= log.lines.size() && log.finished) return std::nullopt;
  std::string out = Render(log, cursor.next_line, query);
  cursor.next_line = log.lines.size();
  return out;
}

}  // namespace canhazgpu::kubesim
