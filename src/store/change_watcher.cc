#include "store/change_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/strings.h"

namespace canhazgpu::store {

absl::StatusOr<ChangeWatcher> ChangeWatcher::Watch(const std::string& db_path) {
  std::filesystem::path path(db_path);
  std::string dir = path.has_parent_path() ? path.parent_path().string() : ".";
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return absl::InternalError(StrCat("inotify_init1: ", strerror(errno)));
  if (inotify_add_watch(fd, dir.c_str(), IN_MODIFY | IN_CREATE | IN_MOVED_TO) < 0) {
    int err = errno;
    close(fd);
    return absl::InternalError(StrCat("cannot watch ", dir, ": ", strerror(err)));
  }
  return ChangeWatcher(fd, path.filename().string());
}

ChangeWatcher::ChangeWatcher(ChangeWatcher&& other) noexcept
    : fd_(other.fd_), db_name_(std::move(other.db_name_)), keep_open_(other.keep_open_) {
  other.fd_ = -1;
}

ChangeWatcher::~ChangeWatcher() {
  if (fd_ >= 0 && !keep_open_) close(fd_);
}

bool ChangeWatcher::Drain() {
  bool ours = false;
  alignas(struct inotify_event) char buf[4096];
  for (;;) {
    ssize_t n = read(fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const struct inotify_event*>(buf + at);
      if (event->len > 0) {
        std::string name(event->name);
        if (name == db_name_ || name == db_name_ + "-wal") ours = true;
      }
      at += static_cast<ssize_t>(sizeof(struct inotify_event) + event->len);
    }
  }
  return ours;
}

}  // namespace canhazgpu::store
