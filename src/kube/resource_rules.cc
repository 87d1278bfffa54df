#include "kube/resource_rules.h"

#include <regex>
#include <set>

#include "core/strings.h"

namespace canhazgpu::kube {
namespace {

using nlohmann::json;

const std::regex& DnsLabel() {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return re;
}
const std::regex& DnsSubdomain() {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return re;
}
const std::regex& CIdentifier() {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_]*");
  return re;
}

class DraRules {
 public:
  explicit DraRules(std::vector<StatusCause>& out) : out_(out) {}

  void Invalid(const std::string& field, const json& value, const std::string& why) {
    out_.push_back(
        {"FieldValueInvalid", StrCat("Invalid value: ", value.dump(), ": ", why), field});
  }
  void Required(const std::string& field) {
    out_.push_back({"FieldValueRequired", "Required value", field});
  }
  void TooMany(const std::string& field, size_t n, size_t max, const std::string& what = "items") {
    out_.push_back({"FieldValueTooMany",
                    StrCat("Too many: ", n, ": must have at most ", max, " ", what), field});
  }
  void TooLong(const std::string& field, size_t max) {
    out_.push_back(
        {"FieldValueTooLong", StrCat("Too long: may not be more than ", max, " bytes"), field});
  }

  void Label(const std::string& field, const json& v) {
    if (!v.is_string() || v.get<std::string>().empty()) return Required(field);
    const std::string s = v;
    if (s.size() > 63 || !std::regex_match(s, DnsLabel())) {
      Invalid(field, v,
              "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
              "'-', and must start and end with an alphanumeric character");
    }
  }
  void Subdomain(const std::string& field, const json& v, size_t max) {
    if (!v.is_string() || v.get<std::string>().empty()) return Required(field);
    const std::string s = v;
    if (s.size() > max) return TooLong(field, max);
    if (!std::regex_match(s, DnsSubdomain())) {
      Invalid(field, v,
              "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
              "'-' or '.', and must start and end with an alphanumeric character");
    }
  }
  void QualifiedName(const std::string& field, const std::string& key) {
    const size_t slash = key.find('/');
    const std::string id = slash == std::string::npos ? key : key.substr(slash + 1);
    const std::string domain = slash == std::string::npos ? "" : key.substr(0, slash);
    if (id.size() > 32 || !std::regex_match(id, CIdentifier()) ||
        (slash != std::string::npos &&
         (domain.size() > 63 || !std::regex_match(domain, DnsSubdomain())))) {
      Invalid(field, key,
              "must be a C identifier of at most 32 characters, optionally prefixed by a DNS "
              "subdomain of at most 63 characters and '/'");
    }
  }
  void Selectors(const std::string& field, const json& selectors) {
    if (!selectors.is_array()) return;
    if (selectors.size() > 32) TooMany(field, selectors.size(), 32);
    for (size_t i = 0; i < selectors.size(); ++i) {
      const json expr = selectors[i].value("/cel/expression"_json_pointer, json());
      const std::string at = StrCat(field, "[", i, "].cel.expression");
      if (!expr.is_string() || expr.get<std::string>().empty()) {
        Required(at);
      } else if (expr.get<std::string>().size() > 10 * 1024) {
        TooLong(at, 10 * 1024);
      }
    }
  }

  void Slice(const json& spec) {
    Subdomain("spec.driver", spec.value("driver", json()), 63);
    const json pool = spec.value("pool", json::object());
    if (pool.is_object()) {
      if (!pool.contains("name"))
        Required("spec.pool.name");
      else if (pool["name"].is_string() && pool["name"].get<std::string>().size() > 253)
        TooLong("spec.pool.name", 253);
      if (pool.value("resourceSliceCount", 0) <= 0)
        Invalid("spec.pool.resourceSliceCount", pool.value("resourceSliceCount", json(0)),
                "must be greater than zero");
      if (pool.value("generation", 0) < 0)
        Invalid("spec.pool.generation", pool["generation"], "must be greater than or equal to 0");
    }
    int selections = 0;
    selections += spec.value("nodeName", "").empty() ? 0 : 1;
    selections += spec.contains("nodeSelector") && !spec["nodeSelector"].is_null() ? 1 : 0;
    selections += spec.value("allNodes", false) ? 1 : 0;
    selections += spec.value("perDeviceNodeSelection", false) ? 1 : 0;
    if (selections != 1) {
      out_.push_back({"FieldValueRequired",
                      selections == 0
                          ? "Required value: exactly one of `nodeName`, `nodeSelector`, "
                            "`allNodes`, `perDeviceNodeSelection` is required"
                          : "Invalid value: {\"`nodeName`, `nodeSelector`, `allNodes`, "
                            "`perDeviceNodeSelection`\"}: exactly one field must be set",
                      "spec"});
    }
    const json devices = spec.value("devices", json::array());
    if (!devices.is_array()) return;
    if (devices.size() > 128) TooMany("spec.devices", devices.size(), 128);
    std::set<std::string> names;
    for (size_t i = 0; i < devices.size(); ++i) {
      const json& d = devices[i];
      const std::string at = StrCat("spec.devices[", i, "]");
      Label(at + ".name", d.value("name", json()));
      if (d.contains("name") && d["name"].is_string() &&
          !names.insert(d["name"].get<std::string>()).second) {
        out_.push_back(
            {"FieldValueDuplicate", StrCat("Duplicate value: ", d["name"].dump()), at + ".name"});
      }
      const json attributes = d.value("attributes", json::object());
      const json capacity = d.value("capacity", json::object());
      const size_t n = (attributes.is_object() ? attributes.size() : 0) +
                       (capacity.is_object() ? capacity.size() : 0);
      if (n > 32) TooMany(at, n, 32, "attributes and capacities combined");
      if (attributes.is_object()) {
        for (const auto& [key, value] : attributes.items()) {
          const std::string attr = StrCat(at, ".attributes[", key, "]");
          QualifiedName(attr, key);
          int set = 0;
          for (const char* f : {"int", "bool", "string", "version"})
            set += value.contains(f) ? 1 : 0;
          if (set != 1) Invalid(attr, value, "exactly one value must be specified");
          for (const char* f : {"string", "version"}) {
            if (value.contains(f) && value[f].is_string() &&
                value[f].get<std::string>().size() > 64) {
              TooLong(StrCat(attr, ".", f), 64);
            }
          }
        }
      }
      if (capacity.is_object()) {
        for (const auto& [key, value] : capacity.items()) {
          QualifiedName(StrCat(at, ".capacity[", key, "]"), key);
          if (!value.contains("value")) Required(StrCat(at, ".capacity[", key, "].value"));
        }
      }
    }
  }

  void ClaimSpec(const std::string& base, const json& spec) {
    const json requests = spec.value("/devices/requests"_json_pointer, json::array());
    if (!requests.is_array()) return;
    const std::string field = base + ".devices.requests";
    if (requests.size() > 32) TooMany(field, requests.size(), 32);
    std::set<std::string> names;
    for (size_t i = 0; i < requests.size(); ++i) {
      const json& r = requests[i];
      const std::string at = StrCat(field, "[", i, "]");
      Label(at + ".name", r.value("name", json()));
      if (r.contains("name") && r["name"].is_string() &&
          !names.insert(r["name"].get<std::string>()).second) {
        out_.push_back(
            {"FieldValueDuplicate", StrCat("Duplicate value: ", r["name"].dump()), at + ".name"});
      }
      const bool exactly = r.contains("exactly") && r["exactly"].is_object();
      const bool first = r.contains("firstAvailable") && r["firstAvailable"].is_array() &&
                         !r["firstAvailable"].empty();
      if (exactly == first) {
        Invalid(at, json("{`exactly`, `firstAvailable`}"),
                "exactly one of `exactly` or `firstAvailable` is required");
        continue;
      }
      auto exact = [&](const json& e, const std::string& where) {
        Subdomain(where + ".deviceClassName", e.value("deviceClassName", json()), 253);
        const std::string mode = e.value("allocationMode", "ExactCount");
        if (mode != "ExactCount" && mode != "All") {
          out_.push_back({"FieldValueNotSupported",
                          StrCat("Unsupported value: \"", mode,
                                 "\": supported values: \"All\", \"ExactCount\""),
                          where + ".allocationMode"});
        }
        if (mode == "ExactCount" && e.contains("count") && e["count"].is_number_integer() &&
            e["count"].get<int64_t>() <= 0) {
          Invalid(where + ".count", e["count"], "must be greater than zero");
        }
        Selectors(where + ".selectors", e.value("selectors", json::array()));
      };
      if (exactly) {
        exact(r["exactly"], at + ".exactly");
      } else {
        if (r["firstAvailable"].size() > 8)
          TooMany(at + ".firstAvailable", r["firstAvailable"].size(), 8);
        for (size_t j = 0; j < r["firstAvailable"].size(); ++j) {
          const std::string sub = StrCat(at, ".firstAvailable[", j, "]");
          Label(sub + ".name", r["firstAvailable"][j].value("name", json()));
          exact(r["firstAvailable"][j], sub);
        }
      }
    }
    for (const char* list : {"constraints", "config"}) {
      const json items = spec.value("devices", json::object()).value(list, json::array());
      if (items.is_array() && items.size() > 32)
        TooMany(StrCat(base, ".devices.", list), items.size(), 32);
    }
  }

 private:
  std::vector<StatusCause>& out_;
};

}  // namespace

std::vector<StatusCause> CheckResourceSliceSpec(const json& spec) {
  std::vector<StatusCause> out;
  DraRules(out).Slice(spec);
  return out;
}

std::vector<StatusCause> CheckDeviceClaimSpec(const std::string& base, const json& spec) {
  std::vector<StatusCause> out;
  DraRules(out).ClaimSpec(base, spec);
  return out;
}

std::vector<StatusCause> CheckSelectors(const std::string& field, const json& selectors) {
  std::vector<StatusCause> out;
  DraRules(out).Selectors(field, selectors);
  return out;
}

StatusCause ImmutableField(const std::string& field, const json& value) {
  return {"FieldValueInvalid", StrCat("Invalid value: ", value.dump(), ": field is immutable"),
          field};
}

}  // namespace canhazgpu::kube
