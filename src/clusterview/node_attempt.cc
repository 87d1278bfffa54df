#include "clusterview/node_attempt.h"

#include <map>

#include "clusterview/claim_spec.h"
#include "core/quantity.h"
#include "core/strings.h"
#include "kube/json_object.h"
#include "kube/objects_resource.h"

namespace canhazgpu::clusterview::internal {

using nlohmann::json;

bool Allocated(const json& claim) {
  const json a = claim.value("/status/allocation"_json_pointer, json());
  return a.is_object() && !a.empty();
}

bool PodDone(const json& pod) {
  const std::string phase = kube::StringAt(pod, "/status/phase"_json_pointer);
  return phase == "Succeeded" || phase == "Failed";
}

std::string AllocatedNode(const json& claim) {
  const json terms =
      claim.value("/status/allocation/nodeSelector/nodeSelectorTerms"_json_pointer, json::array());
  for (const json& term : terms) {
    for (const json& field : term.value("matchFields", json::array())) {
      const json values = field.value("values", json::array());
      if (field.value("key", "") == "metadata.name" && field.value("operator", "") == "In" &&
          values.size() == 1 && values[0].is_string()) {
        return values[0].get<std::string>();
      }
    }
  }
  return "";
}

namespace {

// A result's shareID and consumedCapacity. A consumed amount that cannot be
// read makes the result hold the whole device: never count less than held.
void ReadShare(const json& result, TakenDevice& t) {
  const std::string share = kube::StringField(result, "shareID");
  const json consumed = result.value("consumedCapacity", json::object());
  if (share.empty() || !consumed.is_object()) return;
  std::map<std::string, int64_t> amounts;
  for (const auto& [name, quantity] : consumed.items()) {
    auto value = quantity.is_string() ? QuantityValue(quantity.get<std::string>())
                                      : absl::StatusOr<int64_t>(absl::InvalidArgumentError(""));
    if (!value.ok()) return;
    amounts[name] = *value;
  }
  t.share_id = share;
  t.consumed = std::move(amounts);
}

}  // namespace

std::vector<TakenDevice> TakenDevices(const View& view) {
  std::vector<TakenDevice> out;
  for (const auto& [key, claim] : view.claims) {
    if (!Allocated(claim)) continue;
    std::vector<std::string> pods;
    for (const json& r : claim.value("/status/reservedFor"_json_pointer, json::array()))
      if (r.value("resource", "") == "pods") pods.push_back(r.value("name", ""));
    std::string holder = key;
    if (!pods.empty())
      holder += StrCat(" (pod", pods.size() > 1 ? "s " : " ", Join(pods, ", "), ")");
    std::string user;
    if (!pods.empty()) {
      const std::string ns = kube::StringAt(claim, "/metadata/namespace"_json_pointer);
      auto pod = view.pods.find(StrCat(ns, "/", pods[0]));
      if (pod != view.pods.end()) {
        const json labels = pod->second.value("/metadata/labels"_json_pointer, json::object());
        auto it = labels.find(kUserLabel);
        if (it != labels.end() && it->is_string()) user = it->get<std::string>();
      }
    }
    for (const json& r :
         claim.value("/status/allocation/devices/results"_json_pointer, json::array())) {
      if (r.value("adminAccess", false)) continue;  // not considered allocated
      TakenDevice& t = out.emplace_back(
          TakenDevice{r.value("pool", ""), r.value("device", ""), holder, key, pods, user, "", {}});
      ReadShare(r, t);
    }
  }
  return out;
}

namespace {

// A claim from the pod's template, as the claim controller would make it.
std::variant<PodClaim, std::string> FromTemplate(const View& view, const std::string& ns,
                                                 const std::string& template_name) {
  const std::string key = StrCat(ns, "/", template_name);
  auto it = view.templates.find(key);
  if (it == view.templates.end()) return std::string();
  auto typed = kube::ResourceClaimTemplate::FromJson(it->second);
  if (!typed.ok()) return StrCat("resourceclaimtemplate ", key, ": ", typed.status().message());
  const std::string claim_key = StrCat(key, " (template)");
  auto spec = ClaimFromSpec(typed->spec.spec, claim_key);
  if (!spec.ok()) return StrCat("resourceclaimtemplate ", key, ": ", spec.status().message());
  json object = {{"metadata", {{"namespace", ns}, {"name", template_name}}},
                 {"spec", it->second.value("/spec/spec"_json_pointer, json::object())}};
  return PodClaim{claim_key, std::move(object), *std::move(spec)};
}

}  // namespace

std::variant<std::vector<PodClaim>, std::string> ResolveClaims(const View& view, const json& pod,
                                                               bool templates) {
  const std::string ns = kube::StringAt(pod, "/metadata/namespace"_json_pointer);
  const std::string uid = kube::StringAt(pod, "/metadata/uid"_json_pointer);
  std::vector<PodClaim> out;
  const json entries = pod.value("/spec/resourceClaims"_json_pointer, json::array());
  const auto names = PodClaimNames(pod);
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& [entry, name] = names[i];
    const std::string template_name = entries[i].value("resourceClaimTemplateName", "");
    if (name.empty()) {
      if (templates && !template_name.empty()) {
        auto made = FromTemplate(view, ns, template_name);
        if (auto* claim = std::get_if<PodClaim>(&made)) {
          out.push_back(std::move(*claim));
          continue;
        }
        if (!std::get<std::string>(made).empty()) return std::get<std::string>(made);
      }
      std::string why = StrCat(
          "waiting for dynamic resource controller to create the resourceclaim \"", entry, "\"");
      if (!template_name.empty() && !view.templates.contains(StrCat(ns, "/", template_name)))
        why += StrCat(" (resourceclaimtemplate ", ns, "/", template_name, " does not exist)");
      return why;
    }
    auto it = view.claims.find(StrCat(ns, "/", name));
    if (it == view.claims.end()) return StrCat("resourceclaim \"", name, "\" not found");
    const json& claim = it->second;
    if (!template_name.empty()) {
      bool owned = false;
      for (const json& o : claim.value("/metadata/ownerReferences"_json_pointer, json::array()))
        owned |= o.value("uid", "") == uid && o.value("controller", false);
      if (!owned) {
        return StrCat("resourceclaim \"", name, "\" was not created for pod ", KeyOf(pod),
                      " (pod is not owner)");
      }
    }
    if (!kube::StringAt(claim, "/metadata/deletionTimestamp"_json_pointer).empty())
      return StrCat("resourceclaim \"", name, "\" is being deleted");
    PodClaim c{it->first, claim, std::nullopt};
    if (!Allocated(claim)) {
      auto typed = kube::ResourceClaim::FromJson(claim);
      if (!typed.ok()) return StrCat("resourceclaim ", it->first, ": ", typed.status().message());
      auto spec = ClaimFromSpec(typed->spec, it->first);
      if (!spec.ok()) return StrCat("resourceclaim ", it->first, ": ", spec.status().message());
      c.spec = *std::move(spec);
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::variant<std::vector<dra::DeviceClass>, std::string> ClassesFor(
    const View& view, const std::vector<PodClaim>& claims) {
  std::set<std::string> used;
  for (const PodClaim& c : claims) {
    if (!c.spec) continue;
    for (const dra::DeviceRequest& r : c.spec->requests)
      for (const dra::RequestSpec& s : r.alternatives) used.insert(s.device_class);
  }
  std::vector<dra::DeviceClass> classes;
  for (const std::string& name : used) {
    auto it = view.classes.find(name);
    if (it == view.classes.end()) continue;  // the allocator names it as not found
    auto typed = kube::DeviceClass::FromJson(it->second);
    if (!typed.ok()) return StrCat("device class ", name, ": ", typed.status().message());
    auto cls = DeviceClassFrom(*typed);
    if (!cls.ok()) return std::string(cls.status().message());
    classes.push_back(*std::move(cls));
  }
  return classes;
}

std::vector<dra::DevicePool> PoolsOf(const View& view, const std::string& node) {
  std::vector<dra::DevicePool> pools;
  for (const NodePool& p : view.pools.pools) {
    if (p.node != node && !p.node.empty()) continue;
    pools.push_back(p.pool);
  }
  return pools;
}

NodeAttempt AttemptNode(const View& view, const std::string& node,
                        const std::vector<PodClaim>& claims,
                        const std::vector<dra::DeviceClass>& classes,
                        std::vector<dra::DevicePool> pools, const std::vector<TakenDevice>& taken,
                        bool plans) {
  NodeAttempt out;
  std::set<std::string> pool_names;
  for (const dra::DevicePool& p : pools) pool_names.insert(p.pool);
  auto allocator = dra::Allocator::Create(classes, std::move(pools));
  if (!allocator.ok()) {
    out.status = allocator.status();
    return out;
  }
  for (const TakenDevice& t : taken) {
    if (!pool_names.contains(t.pool)) continue;
    (void)(*allocator)
        ->MarkAllocated(t.pool, t.device, t.holder, t.share_id.empty() ? nullptr : &t.consumed);
  }
  for (const PodClaim& c : claims) {
    if (!c.spec) {
      if (plans) out.plans.push_back({c.key, nullptr});
      continue;
    }
    dra::Explanation why;
    auto allocation = (*allocator)->Allocate(*c.spec, &why);
    if (!allocation.ok()) {
      out.plans.clear();
      out.claim = c.key;
      out.why = std::move(why);
      out.status = allocation.status();
      return out;
    }
    if (plans) out.plans.push_back({c.key, AllocationJson(c.object, *allocation, node, view)});
    ++out.claims_done;
  }
  out.fits = true;
  return out;
}

}  // namespace canhazgpu::clusterview::internal
