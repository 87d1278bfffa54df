#include "cli/k8shazgpu/log_follow.h"

#include "core/strings.h"

namespace canhazgpu::cli::k8s {

std::string OrderedTime(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fraction]Z
  if (text.size() < 20 || text[4] != '-' || text[10] != 'T' || text.back() != 'Z') return "";
  std::string_view seconds = text.substr(0, 19);
  std::string_view rest = text.substr(19, text.size() - 20);  // ".fraction" or ""
  std::string fraction;
  if (!rest.empty()) {
    if (rest[0] != '.') return "";
    fraction = std::string(rest.substr(1));
  }
  if (fraction.size() > 9) return "";
  fraction.append(9 - fraction.size(), '0');
  return StrCat(seconds, ".", fraction);
}

std::string LogResume::Line(std::string_view line) {
  const size_t space = line.find(' ');
  const std::string time =
      space == std::string_view::npos ? "" : OrderedTime(line.substr(0, space));
  std::string_view text = time.empty() ? line : line.substr(space + 1);
  if (replaying_ && !time.empty()) {
    if (time < last_time_) return "";
    if (time == last_time_ && ++seen_at_last_time_ <= at_last_time_) return "";
    replaying_ = false;
  }
  if (!time.empty()) {
    if (time == last_time_) {
      ++at_last_time_;
    } else {
      last_time_ = time;
      at_last_time_ = 1;
    }
  }
  ++printed_;
  return StrCat(text, "\n");
}

std::string LogResume::Feed(std::string_view chunk) {
  partial_.append(chunk);
  std::string out;
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    out += Line(std::string_view(partial_).substr(start, nl - start));
  }
  partial_.erase(0, start);
  return out;
}

std::string LogResume::Flush() {
  if (partial_.empty()) return "";
  std::string out = Line(partial_);
  partial_.clear();
  if (!out.empty()) out.pop_back();  // it had no newline
  return out;
}

void LogResume::Restart() {
  partial_.clear();
  replaying_ = printed_ > 0;
  seen_at_last_time_ = 0;
}

absl::Status FollowLogs(kube::Client& client, const std::string& ns, const std::string& pod,
                        const FollowOptions& options,
                        const std::function<void(std::string_view)>& out) {
  LogResume resume;
  absl::Status last = absl::OkStatus();
  for (int attempt = 0; attempt <= options.max_reconnects; ++attempt) {
    if (attempt > 0) resume.Restart();
    kube::LogOptions log{.container = options.container,
                         .follow = true,
                         .since_seconds = 0,
                         .tail_lines = -1,
                         .timestamps = true,
                         .cancel = options.cancel};
    last = client.StreamLogs(ns, pod, log, [&](std::string_view data) {
      if (std::string text = resume.Feed(data); !text.empty()) out(text);
      return true;
    });
    if (options.cancel != nullptr && options.cancel->load()) return absl::OkStatus();
    // The stream ended: the container's end, or a drop. Only the pod says
    // which; after a drop read again.
    if (last.ok() && options.ended && options.ended()) {
      if (std::string text = resume.Flush(); !text.empty()) out(text);
      return absl::OkStatus();
    }
    if (!last.ok() && options.ended && options.ended()) continue;  // once more for the rest
  }
  if (!last.ok()) return last;
  return absl::DeadlineExceededError(StrCat("the log stream of pod ", pod, " kept dropping (",
                                            options.max_reconnects, " reconnects)"));
}

}  // namespace canhazgpu::cli::k8s
