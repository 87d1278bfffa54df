// Consumable capacity (KEP-5075) as the kube-scheduler computes it: what a
// request consumes of a multi-allocatable device's capacity, rounded up by
// the capacity's request policy, and the ids of allocation shares.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dra/devices.h"

namespace canhazgpu::dra {

// What a request consumes of a capacity of `value` under `policy` (nullptr:
// none): the request rounded up to the smallest valid value or to
// min + n*step; without a request, the policy's default or else the whole
// value. nullopt when the policy makes the device ineligible (above max, or
// not among validValues after rounding).
std::optional<int64_t> ConsumedAmount(std::optional<int64_t> requested, int64_t value,
                                      const CapacityRequestPolicy* policy);

// Whether `device` can ever serve capacity `requests`; if so, *demand holds
// what one allocation consumes of each capacity (in the order of
// device.capacity) for a device that allows multiple allocations, and stays
// empty for one that does not. Otherwise *why (if given) says why, e.g.
// "memory 100Gi is more than its 80Gi".
bool CapacityDemand(const Device& device, const std::map<std::string, int64_t>& requests,
                    std::vector<int64_t>* demand, std::string* why = nullptr);

// A fresh share id: a random (version 4) UUID in the k8s-uuid form.
std::string NewShareId();

// Whether `id` has the k8s-uuid form: 8-4-4-4-12 lowercase hex digits.
bool IsShareId(std::string_view id);

}  // namespace canhazgpu::dra
