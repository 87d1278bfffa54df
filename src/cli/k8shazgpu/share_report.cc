#include "cli/k8shazgpu/share_report.h"

#include "core/quantity.h"
#include "core/strings.h"
#include "dra/devices.h"
#include "kube/json_object.h"

namespace canhazgpu::cli::k8s {
namespace {

using kube::StringAt;
using kube::StringField;
using nlohmann::json;

// The array at `pointer`, or an empty one: what the API server sent is
// read, never trusted to have the shape it should.
const json& ArrayAt(const json& object, const json::json_pointer& pointer) {
  static const json kEmpty = json::array();
  if (!object.is_object() || !object.contains(pointer)) return kEmpty;
  const json& value = object.at(pointer);
  return value.is_array() ? value : kEmpty;
}

// The device of `result` in `slices`; nullptr when no slice describes it.
const json* FindDevice(const std::vector<json>& slices, const json& result) {
  for (const json& slice : slices) {
    if (StringAt(slice, "/spec/driver"_json_pointer) != StringField(result, "driver")) continue;
    if (StringAt(slice, "/spec/pool/name"_json_pointer) != StringField(result, "pool")) continue;
    for (const json& device : ArrayAt(slice, "/spec/devices"_json_pointer)) {
      if (StringField(device, "name") == StringField(result, "device")) return &device;
    }
  }
  return nullptr;
}

// The device's memoryIsolation attribute, by its short or qualified name.
std::string IsolationOf(const json* device, const std::string& driver) {
  if (device == nullptr) return "";
  for (const std::string& name : {std::string("memoryIsolation"), driver + "/memoryIsolation"}) {
    const std::string value =
        StringAt(*device, json::json_pointer("/attributes") / name / "string");
    if (!value.empty()) return value;
  }
  return "";
}

std::string IsolationText(const std::string& isolation, const std::string& driver) {
  if (isolation.empty()) return StrCat("memory isolation: not published by ", driver);
  if (isolation == "none") return "memory isolation: none - the share is booked, not enforced";
  return StrCat("memory isolation: ", isolation);
}

std::string Line(const json& result, const json* device) {
  const std::string driver = StringField(result, "driver");
  const std::string where =
      StrCat(StringField(result, "device"), " on ", StringField(result, "pool"));
  if (StringField(result, "shareID").empty()) {
    return StrCat(where, " is not shared by memory on its node: this run holds it whole");
  }
  const std::string consumed = StringAt(result, "/consumedCapacity/memory"_json_pointer);
  absl::StatusOr<int64_t> bytes = QuantityValue(consumed);
  const std::string amount = bytes.ok() ? dra::FormatQuantity(*bytes) : consumed;
  return StrCat(amount.empty() ? "a share" : StrCat("a ", amount, " share"), " of ", where, " (",
                IsolationText(IsolationOf(device, driver), driver), ")");
}

}  // namespace

std::vector<std::string> ShareLines(const std::vector<json>& claims,
                                    const std::vector<json>& slices) {
  std::vector<std::string> lines;
  for (const json& claim : claims) {
    for (const json& result : ArrayAt(claim, "/status/allocation/devices/results"_json_pointer)) {
      if (result.is_object()) lines.push_back(Line(result, FindDevice(slices, result)));
    }
  }
  return lines;
}

std::vector<std::string> FetchShareLines(kube::Client& client, const std::string& ns,
                                         const json& pod) {
  std::vector<json> claims;
  for (const json& s : ArrayAt(pod, "/status/resourceClaimStatuses"_json_pointer)) {
    absl::StatusOr<json> claim =
        client.Get(kube::kResourceClaims, ns, StringField(s, "resourceClaimName"));
    if (claim.ok()) claims.push_back(*std::move(claim));
  }
  std::vector<json> slices;
  if (absl::StatusOr<json> list = client.ListAll(kube::kResourceSlices, "", {}); list.ok()) {
    for (const json& slice : ArrayAt(*list, "/items"_json_pointer)) slices.push_back(slice);
  }
  return ShareLines(claims, slices);
}

}  // namespace canhazgpu::cli::k8s
