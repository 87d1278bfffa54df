#include "clusterview/claim_spec.h"

#include <map>
#include <set>
#include <utility>

#include "core/quantity.h"
#include "core/strings.h"

namespace canhazgpu::clusterview {
namespace {

absl::StatusOr<std::vector<std::string>> Selectors(const std::vector<kube::DeviceSelector>& in) {
  std::vector<std::string> out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].cel.expression.empty())
      return absl::InvalidArgumentError(StrCat("selector #", i, " has no cel.expression"));
    out.push_back(in[i].cel.expression);
  }
  return out;
}

absl::StatusOr<std::vector<dra::DeviceToleration>> Tolerations(
    const std::vector<kube::DeviceToleration>& in) {
  std::vector<dra::DeviceToleration> out;
  for (const kube::DeviceToleration& t : in) {
    dra::DeviceToleration d{t.key, t.op.empty() ? "Equal" : t.op, t.value, t.effect};
    if (d.op != "Equal" && d.op != "Exists") {
      return absl::InvalidArgumentError(
          StrCat("toleration ", t.key, ": unknown operator '", t.op, "' (Equal or Exists)"));
    }
    if (d.op == "Exists" && !d.value.empty()) {
      return absl::InvalidArgumentError(
          StrCat("toleration ", t.key, ": operator Exists takes no value"));
    }
    if (d.op == "Equal" && d.key.empty()) {
      return absl::InvalidArgumentError("a toleration without a key needs operator Exists");
    }
    if (!d.effect.empty() && d.effect != "NoSchedule" && d.effect != "NoExecute") {
      return absl::InvalidArgumentError(StrCat("toleration ", t.key, ": unknown effect '", t.effect,
                                               "' (NoSchedule or NoExecute)"));
    }
    out.push_back(std::move(d));
  }
  return out;
}

// capacity.requests: amounts (bytes, counts), never negative.
absl::StatusOr<std::map<std::string, int64_t>> CapacityRequests(
    const kube::CapacityRequirements& in) {
  std::map<std::string, int64_t> out;
  for (const auto& [name, text] : in.requests) {
    const std::string field = StrCat("capacity.requests.", name);
    if (name.empty()) return absl::InvalidArgumentError("capacity.requests: an empty name");
    auto value = QuantityValue(text);
    if (!value.ok())
      return absl::InvalidArgumentError(StrCat(field, ": ", value.status().message()));
    if (*value < 0)
      return absl::InvalidArgumentError(StrCat(field, ": '", text, "' must not be negative"));
    out[name] = *value;
  }
  return out;
}

// The fields an exact request and a sub-request share.
absl::StatusOr<dra::RequestSpec> Spec(std::string name, const std::string& device_class,
                                      const std::vector<kube::DeviceSelector>& selectors,
                                      const std::string& mode, std::optional<int64_t> count,
                                      const std::vector<kube::DeviceToleration>& tolerations,
                                      const kube::CapacityRequirements& capacity) {
  dra::RequestSpec spec;
  spec.name = std::move(name);
  if (device_class.empty()) return absl::InvalidArgumentError("deviceClassName is required");
  spec.device_class = device_class;
  auto s = Selectors(selectors);
  if (!s.ok()) return s.status();
  spec.selectors = *std::move(s);
  if (mode == "All") {
    if (count.has_value())
      return absl::InvalidArgumentError("count must not be set with allocationMode All");
    spec.all = true;
  } else if (mode.empty() || mode == "ExactCount") {
    spec.count = count.value_or(1);
    if (spec.count < 1)
      return absl::InvalidArgumentError(StrCat("count ", spec.count, " must be at least 1"));
  } else {
    return absl::InvalidArgumentError(
        StrCat("unknown allocationMode '", mode, "' (ExactCount or All)"));
  }
  auto t = Tolerations(tolerations);
  if (!t.ok()) return t.status();
  spec.tolerations = *std::move(t);
  auto c = CapacityRequests(capacity);
  if (!c.ok()) return c.status();
  spec.capacity_requests = *std::move(c);
  return spec;
}

absl::StatusOr<dra::DeviceRequest> RequestFrom(const kube::DeviceRequest& r) {
  dra::DeviceRequest out;
  out.name = r.name;
  const bool exactly = !r.exactly.IsEmpty();
  if (exactly == !r.first_available.empty())
    return absl::InvalidArgumentError("needs exactly one of exactly and firstAvailable");
  if (exactly) {
    const kube::ExactDeviceRequest& e = r.exactly;
    auto spec = Spec("", e.device_class_name, e.selectors, e.allocation_mode, e.count,
                     e.tolerations, e.capacity);
    if (!spec.ok()) return spec.status();
    spec->admin_access = e.admin_access.value_or(false);
    out.alternatives.push_back(*std::move(spec));
    return out;
  }
  out.first_available = true;
  std::set<std::string> names;
  for (const kube::DeviceSubRequest& sub : r.first_available) {
    if (sub.name.empty() || !names.insert(sub.name).second) {
      return absl::InvalidArgumentError(
          StrCat("firstAvailable: sub-request name '", sub.name, "' is empty or repeated"));
    }
    auto spec = Spec(sub.name, sub.device_class_name, sub.selectors, sub.allocation_mode, sub.count,
                     sub.tolerations, sub.capacity);
    if (!spec.ok()) {
      return absl::InvalidArgumentError(
          StrCat("firstAvailable ", sub.name, ": ", spec.status().message()));
    }
    out.alternatives.push_back(*std::move(spec));
  }
  return out;
}

}  // namespace

absl::StatusOr<dra::Claim> ClaimFromSpec(const kube::ResourceClaimSpec& spec,
                                         const std::string& holder) {
  dra::Claim claim;
  claim.name = holder;
  const kube::DeviceClaim& devices = spec.devices;
  if (devices.requests.empty()) return absl::InvalidArgumentError("the claim has no requests");
  std::set<std::string> names;  // "req" and "req/sub"
  for (const kube::DeviceRequest& r : devices.requests) {
    if (r.name.empty() || !names.insert(r.name).second) {
      return absl::InvalidArgumentError(StrCat("request name '", r.name, "' is empty or repeated"));
    }
    auto request = RequestFrom(r);
    if (!request.ok())
      return absl::InvalidArgumentError(
          StrCat("request ", r.name, ": ", request.status().message()));
    for (const dra::RequestSpec& s : request->alternatives) {
      if (!s.name.empty()) names.insert(StrCat(r.name, "/", s.name));
    }
    claim.requests.push_back(*std::move(request));
  }
  for (const kube::DeviceConstraint& c : devices.constraints) {
    if (c.match_attribute.empty() == c.distinct_attribute.empty()) {
      return absl::InvalidArgumentError(
          "a constraint needs exactly one of matchAttribute and distinctAttribute");
    }
    const std::string& attribute =
        c.match_attribute.empty() ? c.distinct_attribute : c.match_attribute;
    if (attribute.find('/') == std::string::npos) {
      return absl::InvalidArgumentError(
          StrCat("constraint attribute '", attribute,
                 "' must be fully qualified (domain/name, e.g. gpu.canhazgpu.dev/productName)"));
    }
    for (const std::string& r : c.requests) {
      if (!names.contains(r)) {
        return absl::InvalidArgumentError(StrCat("constraint on ", attribute, " names request '", r,
                                                 "' that the claim does not have"));
      }
    }
    claim.constraints.push_back({c.requests, c.match_attribute, c.distinct_attribute});
  }
  return claim;
}

absl::StatusOr<dra::DeviceClass> DeviceClassFrom(const kube::DeviceClass& device_class) {
  auto selectors = Selectors(device_class.spec.selectors);
  if (!selectors.ok()) {
    return absl::InvalidArgumentError(
        StrCat("device class ", device_class.metadata.name, ": ", selectors.status().message()));
  }
  return dra::DeviceClass{device_class.metadata.name, *std::move(selectors)};
}

}  // namespace canhazgpu::clusterview
