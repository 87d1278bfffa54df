#include "dra/capacity.h"

#include <algorithm>
#include <random>

#include "core/strings.h"
#include "core/uuid.h"

namespace canhazgpu::dra {
namespace {

// roundUpRange: below min is min; otherwise min + n*step, n rounded up.
int64_t RoundUpRange(int64_t requested, const CapacityRequestPolicy& p) {
  const int64_t min = *p.range_min;
  if (requested < min) return min;
  if (!p.range_step.has_value() || *p.range_step <= 0) return requested;
  const int64_t step = *p.range_step;
  const int64_t added = requested - min;
  int64_t n = added / step;
  if (added % step != 0) ++n;
  return min + step * n;
}

// roundUpValidValues: the smallest valid value at or above the request;
// the request itself when there is none (violatesPolicy then rejects it).
int64_t RoundUpValidValues(int64_t requested, const std::vector<int64_t>& valid) {
  for (int64_t v : valid) {
    if (requested <= v) return v;
  }
  return requested;
}

// violatesPolicy, applied to the rounded amount as the scheduler does.
bool ViolatesPolicy(int64_t amount, const CapacityRequestPolicy& p) {
  if (p.default_value.has_value() && amount == *p.default_value) return false;
  if (p.range_min.has_value()) return p.range_max.has_value() && amount > *p.range_max;
  if (!p.valid_values.empty()) {
    return std::find(p.valid_values.begin(), p.valid_values.end(), amount) == p.valid_values.end();
  }
  return false;
}

}  // namespace

std::optional<int64_t> ConsumedAmount(std::optional<int64_t> requested, int64_t value,
                                      const CapacityRequestPolicy* policy) {
  if (policy == nullptr) return requested.value_or(value);
  int64_t amount = value;
  if (!requested.has_value()) {
    amount = policy->default_value.value_or(value);
  } else if (policy->range_min.has_value()) {
    amount = RoundUpRange(*requested, *policy);
  } else if (!policy->valid_values.empty()) {
    amount = RoundUpValidValues(*requested, policy->valid_values);
  } else {
    amount = *requested;
  }
  if (ViolatesPolicy(amount, *policy)) return std::nullopt;
  return amount;
}

bool CapacityDemand(const Device& device, const std::map<std::string, int64_t>& requests,
                    std::vector<int64_t>* demand, std::string* why) {
  demand->clear();
  // The request acts as the filter capacity[name] >= request first.
  for (const auto& [name, amount] : requests) {
    auto it = device.capacity.find(name);
    if (it == device.capacity.end()) {
      if (why != nullptr) *why = StrCat("it has no capacity ", name);
      return false;
    }
    if (it->second < amount) {
      if (why != nullptr) {
        *why = StrCat(name, " ", FormatQuantity(amount), " is more than its ",
                      FormatQuantity(it->second));
      }
      return false;
    }
  }
  if (!device.allow_multiple_allocations) return true;
  for (const auto& [name, value] : device.capacity) {
    auto req = requests.find(name);
    std::optional<int64_t> requested;
    if (req != requests.end()) requested = req->second;
    auto pol = device.request_policies.find(name);
    std::optional<int64_t> amount = ConsumedAmount(
        requested, value, pol == device.request_policies.end() ? nullptr : &pol->second);
    if (!amount.has_value() || *amount > value) {
      if (why != nullptr) {
        *why = StrCat(name, " ", requested ? FormatQuantity(*requested) : "(default)",
                      " is outside its request policy");
      }
      demand->clear();
      return false;
    }
    demand->push_back(*amount);
  }
  return true;
}

std::string NewShareId() { return RandomUuid(); }

bool IsShareId(std::string_view id) {
  if (id.size() != 36) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

}  // namespace canhazgpu::dra
