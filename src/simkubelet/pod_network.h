// The simulated cluster's pod network, as far as addresses and names go:
// the stand-in for a CNI plugin and for the cluster DNS, shared by every
// kubelet of one cluster (all are in one process, on one machine).
//
// - Addresses: each pod the kubelets start gets its own loopback address
//   from the cluster's block (pod_addresses.h), reported as status.podIP
//   and status.podIPs (hostIP stays the node's) and given back when the
//   pod finishes. The pod's processes are not confined to it — there is no
//   network namespace — but a server that binds its pod's address is
//   reachable there, and only there, as in a cluster.
// - Names: each pod has its own hosts file, `<pod dir>/etc-hosts`
//   (pod_hosts.h: the machine's lines, the pod's own entry as the kubelet
//   writes it, and the names of the pods behind headless Services, which
//   this watches), and its containers see it as /etc/hosts in a private
//   mount namespace, with the pod's hostname (pod_sandbox.h). Whenever a
//   pod gets or gives back an address, becomes ready or not, or a Service
//   changes, every pod's file that changed is rewritten in place —
//   truncated to its new text, the same inode, never renamed, since the
//   bind mount pins the inode — under an exclusive flock(2). So a rank
//   started before rank 0 resolves rank 0's name once rank 0 has an
//   address: glibc reads /etc/hosts again on every lookup (nscd, where it
//   runs, would answer from the machine's file instead). A lookup that
//   races a rewrite may miss once, as a DNS query may time out; clients
//   retry. Where the machine allows no private namespaces the pods get
//   addresses and files all the same, but see the machine's /etc/hosts and
//   hostname (one log line says so); isolated() tells which.
//
// Thread-safe: Attach, SetReady and Detach from any pod worker; the
// Services are watched on an informer thread of its own.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "simkubelet/pod_addresses.h"
#include "simkubelet/pod_hosts.h"

namespace canhazgpu::simkubelet {

struct PodNetworkOptions {
  // The machine's hosts file, whose lines every pod's file starts with.
  std::string machine_hosts = "/etc/hosts";
  // The first address of the cluster's block (PodAddressBlock); 0: one at
  // random.
  uint32_t block_start = 0;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

class PodNetwork {
 public:
  // `client` must outlive it.
  PodNetwork(kube::Client& client, PodNetworkOptions options);
  ~PodNetwork();
  PodNetwork(const PodNetwork&) = delete;
  PodNetwork& operator=(const PodNetwork&) = delete;

  // Reads the machine's hosts file, finds out whether pods can have
  // private namespaces here, and starts watching Services (waiting for the
  // first list). InvalidArgument for a block_start that starts no block.
  absl::Status Start();
  void Stop();

  // Whether containers run in a PodSandbox (after Start).
  bool isolated() const { return isolated_; }
  std::string cidr() const;

  // Gives pod `pod.uid` an address (the same one again while it holds one)
  // and writes its hosts file at `hosts_file` (directories made). Pods
  // start not ready. ResourceExhausted when the block has no free address.
  absl::StatusOr<std::string> Attach(const PodHostEntry& pod, const std::string& hosts_file);
  // Every container of the pod running, or not any more.
  void SetReady(const std::string& uid, bool ready);
  // The pod is finished or gone: its address is free, its names go.
  // Nothing for a pod that holds no address.
  void Detach(const std::string& uid);

 private:
  struct Attached {
    PodHostEntry entry;
    std::string hosts_file;
    std::string written;  // the file's text as last written
  };
  void OnService(const nlohmann::json& service, bool deleted);
  // Writes every pod's file whose text changed.
  void RewriteChanged() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  kube::Client& client_;
  PodNetworkOptions options_;
  std::string machine_hosts_;
  bool isolated_ = false;
  std::unique_ptr<kube::Informer> services_;

  mutable Mutex mu_;
  PodAddressBlock block_ ABSL_GUARDED_BY(mu_) = PodAddressBlock(0);
  std::map<std::string, HeadlessService> headless_ ABSL_GUARDED_BY(mu_);  // by "ns/name"
  std::map<std::string, Attached> pods_ ABSL_GUARDED_BY(mu_);             // by uid
};

}  // namespace canhazgpu::simkubelet
