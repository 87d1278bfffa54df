#include "kubesim/capacity_rules.h"

#include <optional>

#include "core/quantity.h"
#include "core/strings.h"

namespace canhazgpu::kubesim {
namespace {

using kube::StatusCause;
using nlohmann::json;

class CapacityRules {
 public:
  explicit CapacityRules(std::vector<StatusCause>& out) : out_(out) {}

  void Invalid(const std::string& field, const json& value, const std::string& why) {
    out_.push_back(
        {"FieldValueInvalid", StrCat("Invalid value: ", value.dump(), ": ", why), field});
  }
  void Forbidden(const std::string& field, const std::string& why) {
    out_.push_back({"FieldValueForbidden", StrCat("Forbidden: ", why), field});
  }

  // The quantity at `field`; nullopt (with a cause) when it is not one.
  std::optional<int64_t> Quantity(const std::string& field, const json& v) {
    if (!v.is_string()) {
      Invalid(field, v, "must be a quantity");
      return std::nullopt;
    }
    auto value = QuantityValue(v.get<std::string>());
    if (!value.ok()) {
      Invalid(field, v, "must be a quantity");
      return std::nullopt;
    }
    return *value;
  }

  // A quantity that must not be negative.
  void NonNegative(const std::string& field, const json& v) {
    auto value = Quantity(field, v);
    if (value && *value < 0) Invalid(field, v, "must be greater than or equal to 0");
  }

  void Capacity(const std::string& at, const json& capacity, bool multiple) {
    if (!capacity.is_object() || !capacity.contains("requestPolicy")) return;
    const json& policy = capacity["requestPolicy"];
    if (!policy.is_object()) return;
    const std::string field = StrCat(at, ".requestPolicy");
    if (!multiple) {
      return Forbidden(field, "requires allowMultipleAllocations to be true");
    }
    auto value = Quantity(StrCat(at, ".value"), capacity.value("value", json()));
    if (!value) return;
    std::optional<int64_t> def;
    if (policy.contains("default")) {
      def = Quantity(StrCat(field, ".default"), policy["default"]);
      if (def && *def > *value)
        Invalid(StrCat(field, ".default"), policy["default"],
                "must be less than or equal to capacity value");
    }
    const bool values = policy.contains("validValues"), range = policy.contains("validRange");
    if (values && range) {
      return Forbidden(field, "exactly one of `validValues`, `validRange` may be specified");
    }
    if (values) ValidValues(StrCat(field, ".validValues"), policy["validValues"], def, *value);
    if (range) ValidRange(field, policy["validRange"], def, *value);
  }

  void ValidValues(const std::string& field, const json& list, std::optional<int64_t> def,
                   int64_t value) {
    if (!list.is_array()) return;
    if (list.size() > 10) {
      out_.push_back({"FieldValueTooMany",
                      StrCat("Too many: ", list.size(), ": must have at most 10 items"), field});
      return;
    }
    std::optional<int64_t> last;
    bool has_default = !def.has_value();
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = StrCat(field, "[", i, "]");
      auto v = Quantity(at, list[i]);
      if (!v) return;
      if (last && *v <= *last) Invalid(at, list[i], "must be sorted in ascending order and unique");
      if (*v > value) Invalid(at, list[i], "must be less than or equal to capacity value");
      has_default |= def && *v == *def;
      last = v;
    }
    if (!has_default) {
      Invalid(field, list, "must include the default value");
    }
  }

  void ValidRange(const std::string& policy_field, const json& range, std::optional<int64_t> def,
                  int64_t value) {
    const std::string field = StrCat(policy_field, ".validRange");
    if (!range.is_object()) return;
    if (!range.contains("min")) return;  // required by the schema, which says so
    auto min = Quantity(StrCat(field, ".min"), range["min"]);
    if (!min) return;
    if (*min < 0)
      Invalid(StrCat(field, ".min"), range["min"], "must be greater than or equal to 0");
    if (*min > value)
      Invalid(StrCat(field, ".min"), range["min"], "must be less than or equal to capacity value");
    if (def && *def < *min)
      Invalid(StrCat(policy_field, ".default"), json(*def), "must not be less than validRange.min");
    std::optional<int64_t> max;
    if (range.contains("max")) {
      max = Quantity(StrCat(field, ".max"), range["max"]);
      if (max && *max < *min)
        Invalid(StrCat(field, ".max"), range["max"], "must be greater than or equal to min");
      if (max && *max > value)
        Invalid(StrCat(field, ".max"), range["max"],
                "must be less than or equal to capacity value");
      if (max && def && *def > *max)
        Invalid(StrCat(policy_field, ".default"), json(*def),
                "must not be more than validRange.max");
    }
    if (range.contains("step")) Step(field, range["step"], *min, max, def, value);
  }

  void Step(const std::string& field, const json& v, int64_t min, std::optional<int64_t> max,
            std::optional<int64_t> def, int64_t value) {
    const std::string at = StrCat(field, ".step");
    auto step = Quantity(at, v);
    if (!step) return;
    if (*step <= 0) return Invalid(at, v, "must be greater than 0");
    if (min + *step > value)
      Invalid(at, v, "min + step must be less than or equal to capacity value");
    if (max && *max % *step != 0)
      Invalid(StrCat(field, ".max"), json(*max), "must be a multiple of step");
    if (def && *def % *step != 0) Invalid(at, v, "the default must be a multiple of step");
  }

  void ShareId(const std::string& field, const json& v) {
    if (!v.is_string()) return;  // the schema's
    const std::string id = v;
    bool ok = id.size() == 36;
    for (size_t i = 0; ok && i < id.size(); ++i) {
      const char c = id[i];
      ok = (i == 8 || i == 13 || i == 18 || i == 23)
               ? c == '-'
               : (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    }
    if (!ok) Invalid(field, v, "must be a lowercase UUID in 8-4-4-4-12 format");
  }

 private:
  std::vector<StatusCause>& out_;
};

void RequestsOf(CapacityRules& rules, const std::string& at, const json& request) {
  const json requests = request.value("/capacity/requests"_json_pointer, json::object());
  if (!requests.is_object()) return;
  for (const auto& [name, quantity] : requests.items())
    rules.NonNegative(StrCat(at, ".capacity.requests[", name, "]"), quantity);
}

}  // namespace

std::vector<StatusCause> CheckSliceCapacity(const json& spec) {
  std::vector<StatusCause> out;
  CapacityRules rules(out);
  const json devices = spec.value("devices", json::array());
  for (size_t i = 0; devices.is_array() && i < devices.size(); ++i) {
    const json& d = devices[i];
    if (!d.is_object()) continue;
    const bool multiple = d.value("allowMultipleAllocations", json(false)) == json(true);
    const json capacity = d.value("capacity", json::object());
    if (!capacity.is_object()) continue;
    for (const auto& [name, c] : capacity.items())
      rules.Capacity(StrCat("spec.devices[", i, "].capacity[", name, "]"), c, multiple);
  }
  return out;
}

std::vector<StatusCause> CheckCapacityRequests(const std::string& base, const json& spec) {
  std::vector<StatusCause> out;
  CapacityRules rules(out);
  const json requests = spec.value("/devices/requests"_json_pointer, json::array());
  for (size_t i = 0; requests.is_array() && i < requests.size(); ++i) {
    const json& r = requests[i];
    if (!r.is_object()) continue;
    const std::string at = StrCat(base, ".devices.requests[", i, "]");
    if (r.contains("exactly")) RequestsOf(rules, StrCat(at, ".exactly"), r["exactly"]);
    const json subs = r.value("firstAvailable", json::array());
    for (size_t j = 0; subs.is_array() && j < subs.size(); ++j)
      RequestsOf(rules, StrCat(at, ".firstAvailable[", j, "]"), subs[j]);
  }
  return out;
}

std::vector<StatusCause> CheckClaimShares(const json& status) {
  std::vector<StatusCause> out;
  CapacityRules rules(out);
  const json results = status.value("/allocation/devices/results"_json_pointer, json::array());
  for (size_t i = 0; results.is_array() && i < results.size(); ++i) {
    const json& r = results[i];
    if (!r.is_object()) continue;
    const std::string at = StrCat("status.allocation.devices.results[", i, "]");
    if (r.contains("shareID")) rules.ShareId(StrCat(at, ".shareID"), r["shareID"]);
    const json consumed = r.value("consumedCapacity", json::object());
    if (!consumed.is_object()) continue;
    for (const auto& [name, q] : consumed.items())
      rules.NonNegative(StrCat(at, ".consumedCapacity[", name, "]"), q);
  }
  const json devices = status.value("devices", json::array());
  for (size_t i = 0; devices.is_array() && i < devices.size(); ++i) {
    if (devices[i].is_object() && devices[i].contains("shareID"))
      rules.ShareId(StrCat("status.devices[", i, "].shareID"), devices[i]["shareID"]);
  }
  return out;
}

}  // namespace canhazgpu::kubesim
