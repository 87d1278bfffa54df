#include "kubesim/claim_status_rules.h"

#include <set>
#include <string>
#include <tuple>

#include "core/strings.h"

namespace canhazgpu::kubesim {
namespace {

using kube::StatusCause;
using nlohmann::json;

constexpr size_t kMaxDeviceConditions = 8;
constexpr size_t kMaxDeviceDataBytes = 10 * 1024;

std::string TextOf(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

using DeviceStatusKey = std::tuple<std::string, std::string, std::string, std::string>;

DeviceStatusKey DeviceStatusKeyOf(const json& entry) {
  return {TextOf(entry, "driver"), TextOf(entry, "pool"), TextOf(entry, "device"),
          TextOf(entry, "shareID")};
}

std::string DeviceStatusId(const DeviceStatusKey& k) {
  const auto& [driver, pool, device, share] = k;
  return StrCat(driver, "/", pool, "/", device, share.empty() ? "" : "/", share);
}

void CheckConditions(const json& conditions, const std::string& at, std::vector<StatusCause>& out) {
  if (!conditions.is_array()) return;
  if (conditions.size() > kMaxDeviceConditions) {
    out.push_back({"FieldValueTooMany",
                   StrCat("Too many: ", conditions.size(), ": must have at most ",
                          kMaxDeviceConditions, " items"),
                   at});
  }
  std::set<std::string> types;
  for (size_t i = 0; i < conditions.size(); ++i) {
    const json& c = conditions[i];
    const std::string field = StrCat(at, "[", i, "]");
    // Absent fields are the schema's to report (Condition requires them);
    // these are the ones present but empty, which metav1 refuses too.
    auto empty = [&](const char* key) {
      return c.is_object() && c.contains(key) && c[key].is_string() && TextOf(c, key).empty();
    };
    const std::string type = TextOf(c, "type");
    if (empty("type")) out.push_back({"FieldValueRequired", "Required value", field + ".type"});
    if (!type.empty() && !types.insert(type).second) {
      out.push_back(
          {"FieldValueDuplicate", StrCat("Duplicate value: \"", type, "\""), field + ".type"});
    }
    const std::string status = TextOf(c, "status");
    if (c.is_object() && c.contains("status") && status != "True" && status != "False" &&
        status != "Unknown") {
      out.push_back({"FieldValueNotSupported",
                     StrCat("Unsupported value: \"", status,
                            "\": supported values: \"False\", \"True\", \"Unknown\""),
                     field + ".status"});
    }
    if (empty("reason")) out.push_back({"FieldValueRequired", "Required value", field + ".reason"});
  }
}

}  // namespace

std::vector<StatusCause> CheckDeviceStatuses(const json& status) {
  std::vector<StatusCause> out;
  const json devices = status.value("devices", json::array());
  if (!devices.is_array() || devices.empty()) return out;
  std::set<DeviceStatusKey> allocated;
  const json results = status.value("/allocation/devices/results"_json_pointer, json::array());
  for (const json& r : results.is_array() ? results : json::array()) {
    allocated.insert(DeviceStatusKeyOf(r));
  }
  std::set<DeviceStatusKey> seen;
  for (size_t i = 0; i < devices.size(); ++i) {
    const json& entry = devices[i];
    const std::string at = StrCat("status.devices[", i, "]");
    const DeviceStatusKey key = DeviceStatusKeyOf(entry);
    if (!allocated.contains(key)) {
      out.push_back({"FieldValueInvalid",
                     StrCat("Invalid value: \"", DeviceStatusId(key),
                            "\": must be an allocated device in the claim"),
                     at});
    }
    if (!seen.insert(key).second) {
      out.push_back(
          {"FieldValueDuplicate", StrCat("Duplicate value: \"", DeviceStatusId(key), "\""), at});
    }
    if (!entry.is_object()) continue;
    if (entry.contains("conditions")) CheckConditions(entry["conditions"], at + ".conditions", out);
    if (entry.contains("data") && !entry["data"].is_null()) {
      const json& data = entry["data"];
      if (!data.is_object()) {
        out.push_back({"FieldValueInvalid", "Invalid value: must be a JSON object", at + ".data"});
      } else if (data.dump().size() > kMaxDeviceDataBytes) {
        out.push_back({"FieldValueTooLong",
                       StrCat("Too long: may not be more than ", kMaxDeviceDataBytes, " bytes"),
                       at + ".data"});
      }
    }
  }
  return out;
}

}  // namespace canhazgpu::kubesim
