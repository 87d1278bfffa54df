#include "simkubelet/pod_network.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/file_read.h"
#include "core/strings.h"
#include "kube/json_object.h"
#include "simkubelet/pod_sandbox.h"

namespace canhazgpu::simkubelet {
namespace {

using nlohmann::json;

const kube::ResourceRef kServicesRef{"", "v1", "services", true};

constexpr size_t kMaxMachineHosts = 1 << 20;
// What a machine without /etc/hosts would have resolved anyway.
constexpr char kFallbackHosts[] =
    "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";

// Replaces the text of `path` without replacing the file: its inode is
// bind-mounted into running pods. Made (0644) when missing; exclusive
// flock(2) while writing, so two writers never interleave.
absl::Status RewriteHostsFileInPlace(const std::string& path, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(StrCat("open ", path, ": ", std::strerror(errno)));
  absl::Status status;
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  // The new text over the old, then the old tail cut: a reader sees the
  // old file, the new one, or (for an instant) the new head on the old tail.
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n =
        ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      status = absl::InternalError(StrCat("write ", path, ": ", std::strerror(errno)));
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (status.ok() && ::ftruncate(fd, static_cast<off_t>(text.size())) != 0) {
    status = absl::InternalError(StrCat("truncate ", path, ": ", std::strerror(errno)));
  }
  ::close(fd);  // and the lock with it
  return status;
}

std::string ServiceKey(const json& service) {
  return StrCat(kube::StringAt(service, "/metadata/namespace"_json_pointer), "/",
                kube::StringAt(service, "/metadata/name"_json_pointer));
}

}  // namespace

PodNetwork::PodNetwork(kube::Client& client, PodNetworkOptions options)
    : client_(client), options_(std::move(options)) {
  if (!options_.log) options_.log = [](const std::string&) {};
}

PodNetwork::~PodNetwork() { Stop(); }

absl::Status PodNetwork::Start() {
  uint32_t start = options_.block_start;
  if (start == 0) start = PodAddressBlock::RandomBlockStart();
  if (!PodAddressBlock::IsBlockStart(start)) {
    return absl::InvalidArgumentError(
        StrCat("pod addresses: ", FormatIpv4(start),
               " starts no block of 4096 in 127.1.0.0 to 127.254.255.255"));
  }
  absl::StatusOr<std::string> machine =
      ReadRegularFile(options_.machine_hosts, kMaxMachineHosts, "hosts file");
  machine_hosts_ = machine.ok() ? *machine : kFallbackHosts;
  if (!machine.ok()) options_.log(StrCat("pods' hosts files: ", machine.status().message()));
  {
    MutexLock lock(mu_);
    block_ = PodAddressBlock(start);
  }
  absl::Status isolation = CheckPrivateNamespaces();
  isolated_ = isolation.ok();
  if (isolated_) {
    options_.log(StrCat("pod addresses from ", cidr(),
                        "; pods see their own /etc/hosts and hostname (private mount and UTS "
                        "namespaces)"));
  } else {
    options_.log(StrCat("pod addresses from ", cidr(),
                        "; pods see the machine's /etc/hosts and hostname, so pod and Service "
                        "names do not resolve in them: no private mount namespace here (",
                        isolation.message(), ")"));
  }
  services_ = std::make_unique<kube::Informer>(
      client_, kServicesRef, "", kube::ListOptions{},
      kube::InformerHandlers{
          .on_add = [this](const json& s) { OnService(s, false); },
          .on_update = [this](const json&, const json& s) { OnService(s, false); },
          .on_delete = [this](const json& s) { OnService(s, true); }});
  services_->Start();
  if (!services_->WaitForSync(std::chrono::seconds(30))) {
    options_.log("pod network: Services not listed yet; their names follow once they are");
  }
  return absl::OkStatus();
}

void PodNetwork::Stop() {
  if (services_ != nullptr) services_->Stop();
}

std::string PodNetwork::cidr() const {
  MutexLock lock(mu_);
  return block_.cidr();
}

absl::StatusOr<std::string> PodNetwork::Attach(const PodHostEntry& pod,
                                               const std::string& hosts_file) {
  MutexLock lock(mu_);
  auto it = pods_.find(pod.uid);
  if (it != pods_.end()) return it->second.entry.ip;
  std::optional<std::string> ip = block_.Allocate();
  if (!ip.has_value()) {
    return absl::ResourceExhaustedError(StrCat("no free pod address in ", block_.cidr(), ": ",
                                               block_.taken(), " pods hold them all"));
  }
  Attached attached{.entry = pod, .hosts_file = hosts_file, .written = ""};
  attached.entry.ip = *ip;
  attached.entry.ready = false;
  pods_[pod.uid] = std::move(attached);
  RewriteChanged();
  return *ip;
}

void PodNetwork::SetReady(const std::string& uid, bool ready) {
  MutexLock lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end() || it->second.entry.ready == ready) return;
  it->second.entry.ready = ready;
  RewriteChanged();
}

void PodNetwork::Detach(const std::string& uid) {
  MutexLock lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  block_.Release(it->second.entry.ip);
  pods_.erase(it);
  RewriteChanged();
}

void PodNetwork::OnService(const json& service, bool deleted) {
  const std::string key = ServiceKey(service);
  std::optional<HeadlessService> headless = deleted ? std::nullopt : HeadlessServiceOf(service);
  MutexLock lock(mu_);
  auto it = headless_.find(key);
  if (it == headless_.end() && !headless.has_value()) return;  // never ours
  if (headless.has_value()) {
    headless_[key] = std::move(*headless);
  } else {
    headless_.erase(it);
  }
  RewriteChanged();
}

void PodNetwork::RewriteChanged() {
  std::vector<PodHostEntry> pods;
  for (const auto& [uid, p] : pods_) pods.push_back(p.entry);
  std::vector<HeadlessService> services;
  for (const auto& [key, s] : headless_) services.push_back(s);
  for (auto& [uid, p] : pods_) {
    std::string text = PodHostsFile(machine_hosts_, p.entry, pods, services);
    if (text == p.written) continue;
    absl::Status written = RewriteHostsFileInPlace(p.hosts_file, text);
    if (!written.ok()) {
      options_.log(StrCat("pod ", p.entry.ns, "/", p.entry.name, ": ", written.message()));
      continue;
    }
    p.written = std::move(text);
  }
}

}  // namespace canhazgpu::simkubelet
