#include "clusterview/local_holds.h"

#include "core/strings.h"
#include "dra/devices.h"

namespace canhazgpu::clusterview::internal {
namespace {

std::string AttributeText(const dra::Device& d, const char* name) {
  auto it = d.attributes.find(name);
  return it == d.attributes.end() ? "" : it->second.string_value;
}

// "mig-1g5gb-19-0" of "gpu-2-mig-1g5gb-19-0": where on its GPU a MIG device
// sits, the same on every GPU of a product.
std::string Placement(const std::string& name) {
  const size_t dash = name.find('-', name.find('-') + 1);
  return dash == std::string::npos ? "" : name.substr(dash + 1);
}

// "gpu-2" of "gpu-2-mig-1g5gb-19-0".
std::string GpuOf(const std::string& name) {
  const size_t dash = name.find('-', name.find('-') + 1);
  return name.substr(0, dash);
}

}  // namespace

std::vector<HeldDevice> HeldDevices(const View& view, const std::string& node) {
  std::vector<HeldDevice> out;
  auto it = view.node_gpu_statuses.find(node);
  if (it == view.node_gpu_statuses.end()) return out;
  for (const kube::NodeGpuDevice& d : it->second.status.devices) {
    // A GPU shared by local users' shares alone is held by them, as a whole
    // local reservation is (what its pods' shares hold, the claims say).
    const bool locally_shared =
        d.state == "Shared" && d.claims.empty() && d.sharing && !d.sharing->local_shares.empty();
    // Kept whole for a local waiter (keptFor without memory): withdrawn as
    // a held device is, and named after the waiter.
    const kube::NodeGpuQueueKeep* kept = nullptr;
    for (const kube::NodeGpuQueueKeep& k : d.kept_for) {
      if (k.memory.empty() && kept == nullptr) kept = &k;
    }
    if (d.state != "Held" && d.state != "InUse" && !locally_shared && kept == nullptr) continue;
    HeldDevice h;
    h.device = d.name;
    h.state = locally_shared ? "Held" : d.state;
    if (d.state != "Held" && d.state != "InUse" && !locally_shared) {
      h.state = "Kept";
      h.user = kept->user;
      h.since = kept->since;
    } else if (d.held) {
      h.user = d.held->user;
      h.kind = d.held->kind;
      h.since = d.held->since;
      h.until = d.held->until;
    } else if (locally_shared) {
      const kube::NodeGpuLocalShare& first = d.sharing->local_shares.front();
      h.user = first.user;
      h.kind = first.kind;
      h.since = first.since;
      h.until = first.until;
    }
    if (d.usage) h.users = d.usage->users;
    out.push_back(std::move(h));
  }
  return out;
}

void PutBackHeld(const View& view, const std::string& node, std::vector<dra::DevicePool>& pools,
                 std::vector<HeldDevice>& held, std::vector<TakenDevice>* taken) {
  if (held.empty()) return;
  const kube::NodeGpuStatusStatus& devices = view.node_gpu_statuses.at(node).status;
  for (HeldDevice& h : held) {
    const kube::NodeGpuDevice* status = devices.Find(h.device);
    const std::string type = status ? status->type : "";
    const std::string product = status ? status->product_name : "";
    dra::DevicePool* home = nullptr;
    const dra::Device* like = nullptr;
    for (dra::DevicePool& p : pools) {
      if (p.driver != dra::kDriverName || p.pool != node) continue;
      for (const dra::Device& d : p.devices) {
        if (d.name == h.device) {  // still published (the slice is behind)
          home = &p;
          like = nullptr;
          break;
        }
        if (like == nullptr && AttributeText(d, "type") == type &&
            AttributeText(d, "productName") == product &&
            (type != "mig" || Placement(d.name) == Placement(h.device))) {
          home = &p;
          like = &d;
        }
      }
      if (home != nullptr && like == nullptr) break;
    }
    if (home == nullptr) continue;
    if (like != nullptr) {
      dra::Device copy = *like;
      copy.name = h.device;
      copy.consumes_counters.clear();  // its counter set is another GPU's
      copy.taints.clear();
      if (status != nullptr) {
        if (!status->uuid.empty())
          copy.attributes["uuid"] = dra::AttributeValue::String(status->uuid);
        if (status->index) copy.attributes["index"] = dra::AttributeValue::Int(*status->index);
        if (type == "mig") {
          const kube::NodeGpuDevice* parent = devices.Find(GpuOf(h.device));
          if (parent != nullptr && !parent->uuid.empty())
            copy.attributes["parentUUID"] = dra::AttributeValue::String(parent->uuid);
        }
        for (const kube::NodeGpuTaint& t : status->taints) {
          copy.taints.push_back({t.key, t.value, t.effect});
        }
      }
      home->devices.push_back(std::move(copy));
    }
    h.checked = true;
    if (taken != nullptr)
      taken->push_back({home->pool, h.device, StrCat(kLocalHolder, h.device), "", {}, ""});
  }
}

}  // namespace canhazgpu::clusterview::internal
