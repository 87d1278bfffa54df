#include "clusterview/local_holds.h"

#include "core/strings.h"
#include "dra/devices.h"

namespace canhazgpu::clusterview::internal {
namespace {

using nlohmann::json;

std::string Str(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

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

const json* StatusDevice(const json& devices, const std::string& name) {
  for (const json& d : devices)
    if (Str(d, "name") == name) return &d;
  return nullptr;
}

}  // namespace

std::vector<HeldDevice> HeldDevices(const View& view, const std::string& node) {
  std::vector<HeldDevice> out;
  auto it = view.node_gpu_statuses.find(node);
  if (it == view.node_gpu_statuses.end()) return out;
  for (const json& d : it->second.value("/status/devices"_json_pointer, json::array())) {
    if (!d.is_object()) continue;
    const std::string state = Str(d, "state");
    if (state != "Held" && state != "InUse") continue;
    HeldDevice h;
    h.device = Str(d, "name");
    h.state = state;
    const json held = d.value("held", json::object());
    if (held.is_object()) {
      h.user = Str(held, "user");
      h.kind = Str(held, "kind");
      h.since = Str(held, "since");
      h.until = Str(held, "until");
    }
    for (const json& u : d.value("/usage/users"_json_pointer, json::array()))
      if (u.is_string()) h.users.push_back(u.get<std::string>());
    out.push_back(std::move(h));
  }
  return out;
}

void PutBackHeld(const View& view, const std::string& node, std::vector<dra::DevicePool>& pools,
                 std::vector<HeldDevice>& held, std::vector<TakenDevice>* taken) {
  if (held.empty()) return;
  const json devices =
      view.node_gpu_statuses.at(node).value("/status/devices"_json_pointer, json::array());
  for (HeldDevice& h : held) {
    const json* status = StatusDevice(devices, h.device);
    const std::string type = status ? Str(*status, "type") : "";
    const std::string product = status ? Str(*status, "productName") : "";
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
        if (const std::string uuid = Str(*status, "uuid"); !uuid.empty())
          copy.attributes["uuid"] = dra::AttributeValue::String(uuid);
        if (status->contains("index") && (*status)["index"].is_number_integer())
          copy.attributes["index"] = dra::AttributeValue::Int((*status)["index"].get<int64_t>());
        if (type == "mig") {
          const json* parent = StatusDevice(devices, GpuOf(h.device));
          if (parent != nullptr && !Str(*parent, "uuid").empty())
            copy.attributes["parentUUID"] = dra::AttributeValue::String(Str(*parent, "uuid"));
        }
        for (const json& t : status->value("taints", json::array())) {
          if (t.is_object())
            copy.taints.push_back({Str(t, "key"), Str(t, "value"), Str(t, "effect")});
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
