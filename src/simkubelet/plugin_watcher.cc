#include "simkubelet/plugin_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include "core/strings.h"

namespace canhazgpu::simkubelet {
namespace {

// The kubelet considers every socket in the directory that is not hidden.
bool IsPluginSocket(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename();
  struct stat st;
  return !name.empty() && name[0] != '.' && ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

PluginWatcher::PluginWatcher(PluginWatcherOptions options) : options_(std::move(options)) {}

PluginWatcher::~PluginWatcher() { Stop(); }

absl::Status PluginWatcher::Start() {
  std::error_code ec;
  std::filesystem::create_directories(options_.registrar_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(StrCat("cannot create the plugin registrar directory ",
                                                options_.registrar_dir, ": ", ec.message()));
  }
  inotify_fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (inotify_fd_ < 0 || wake_fd_ < 0 ||
      ::inotify_add_watch(inotify_fd_, options_.registrar_dir.c_str(),
                          IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM) < 0) {
    return absl::InternalError(StrCat("cannot watch the plugin registrar directory ",
                                      options_.registrar_dir, ": ", std::strerror(errno)));
  }
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void PluginWatcher::Stop() {
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
  health_streams_.clear();
  for (int* fd : {&inotify_fd_, &wake_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void PluginWatcher::Run() {
  // Sockets present before the watch began: registered first, as the
  // kubelet walks the directory at start.
  std::error_code ec;
  std::set<std::string> present;
  for (const auto& e : std::filesystem::directory_iterator(options_.registrar_dir, ec)) {
    present.insert(e.path().string());
  }
  for (const std::string& path : present) {
    if (IsPluginSocket(path)) SocketAppeared(path);
  }
  alignas(inotify_event) std::array<char, 4096> buffer;
  while (true) {
    std::array<pollfd, 2> fds = {pollfd{inotify_fd_, POLLIN, 0}, pollfd{wake_fd_, POLLIN, 0}};
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const ssize_t n = ::read(inotify_fd_, buffer.data(), buffer.size());
    if (n <= 0) continue;
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer.data() + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      if (event->len == 0) continue;
      const std::string path = StrCat(options_.registrar_dir, "/", event->name);
      if ((event->mask & (IN_CREATE | IN_MOVED_TO)) != 0) {
        if (IsPluginSocket(path)) SocketAppeared(path);
      } else if ((event->mask & (IN_DELETE | IN_MOVED_FROM)) != 0) {
        SocketRemoved(path);
      }
    }
  }
}

void PluginWatcher::SocketAppeared(const std::string& path) {
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> client =
      kubeletplugin::KubeletClient::Register(path, options_.client);
  if (!client.ok()) {
    options_.log(StrCat("plugin registration failed: ", client.status().message()));
    return;
  }
  const std::string driver = (*client)->plugin().name;
  std::shared_ptr<kubeletplugin::KubeletClient> shared = std::move(*client);
  health_streams_.erase(driver);  // the previous registration's stream ends
  if (options_.health != nullptr && !shared->health_service().empty()) {
    health_streams_[driver] =
        std::make_unique<HealthStream>(shared, *options_.health, options_.on_health_change);
  }
  {
    MutexLock lock(mu_);
    plugins_[driver] = Plugin{path, shared};
    ++registrations_[driver];
    changed_.notify_all();
  }
  options_.log(StrCat("registered DRA driver ", driver, " from ", path));
  options_.on_change(driver);
}

void PluginWatcher::SocketRemoved(const std::string& path) {
  std::vector<std::string> forgotten;
  {
    MutexLock lock(mu_);
    for (auto it = plugins_.begin(); it != plugins_.end();) {
      if (it->second.socket == path) {
        forgotten.push_back(it->first);
        it = plugins_.erase(it);
      } else {
        ++it;
      }
    }
    changed_.notify_all();
  }
  for (const std::string& driver : forgotten) {
    health_streams_.erase(driver);
    if (options_.health != nullptr) {
      options_.health->Forget(driver);
      options_.on_health_change(driver);
    }
    options_.log(StrCat("DRA driver ", driver, " deregistered: ", path, " was removed"));
    options_.on_change(driver);
  }
}

std::shared_ptr<kubeletplugin::KubeletClient> PluginWatcher::Get(const std::string& driver) const {
  MutexLock lock(mu_);
  auto it = plugins_.find(driver);
  return it == plugins_.end() ? nullptr : it->second.client;
}

int PluginWatcher::Registrations(const std::string& driver) const {
  MutexLock lock(mu_);
  auto it = registrations_.find(driver);
  return it == registrations_.end() ? 0 : it->second;
}

bool PluginWatcher::WaitForRegistrations(const std::string& driver, int count,
                                         std::chrono::milliseconds timeout) const {
  MutexLock lock(mu_);
  return changed_.wait_for(lock, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const bool registered = plugins_.contains(driver);
    if (count == 0) return !registered;
    auto it = registrations_.find(driver);
    return registered && it != registrations_.end() && it->second >= count;
  });
}

}  // namespace canhazgpu::simkubelet
