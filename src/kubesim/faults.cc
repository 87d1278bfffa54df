#include "kubesim/faults.h"

#include <algorithm>
#include <iterator>

#include "core/strings.h"

namespace canhazgpu::kubesim {

using nlohmann::json;

absl::StatusOr<Fault> Fault::FromJson(const json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("a fault must be a JSON object");
  Fault fault;
  auto text = [&](const char* key, std::string& out) -> absl::Status {
    if (!j.contains(key)) return absl::OkStatus();
    if (!j[key].is_string() || j[key].get<std::string>().empty()) {
      return absl::InvalidArgumentError(StrCat("fault: ", key, ": expected a non-empty string"));
    }
    out = j[key].get<std::string>();
    return absl::OkStatus();
  };
  auto number = [&](const char* key, int64_t low, int64_t high, int64_t& out) -> absl::Status {
    if (!j.contains(key)) return absl::OkStatus();
    if (!j[key].is_number_integer() || j[key].get<int64_t>() < low ||
        j[key].get<int64_t>() > high) {
      return absl::InvalidArgumentError(
          StrCat("fault: ", key, ": expected an integer from ", low, " to ", high));
    }
    out = j[key].get<int64_t>();
    return absl::OkStatus();
  };
  for (const auto& [key, value] : j.items()) {
    static const char* const kKeys[] = {"verb", "resource",          "count",
                                        "code", "retryAfterSeconds", "stallMillis"};
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      return absl::InvalidArgumentError(StrCat("fault: unknown key \"", key, "\""));
    }
  }
  int64_t count = fault.count, code = 0, retry_after = 0, stall = 0;
  for (absl::Status s : {text("verb", fault.verb), text("resource", fault.resource),
                         number("count", 1, kMaxFaultCount, count), number("code", 0, 599, code),
                         number("retryAfterSeconds", 0, 3600, retry_after),
                         number("stallMillis", 0, kMaxFaultStall.count(), stall)}) {
    if (!s.ok()) return s;
  }
  if (code != 0 && code < 400) {
    return absl::InvalidArgumentError("fault: code: expected 0 or an error status (400-599)");
  }
  if (code == 0 && stall == 0) {
    return absl::InvalidArgumentError("fault: give a code, a stallMillis, or both");
  }
  fault.count = static_cast<int>(count);
  fault.code = static_cast<int>(code);
  fault.retry_after_seconds = static_cast<int>(retry_after);
  fault.stall = std::chrono::milliseconds(stall);
  return fault;
}

json Fault::ToJson() const {
  return {{"verb", verb},
          {"resource", resource},
          {"count", count},
          {"code", code},
          {"retryAfterSeconds", retry_after_seconds},
          {"stallMillis", stall.count()}};
}

void FaultInjector::Add(Fault fault) {
  MutexLock lock(mu_);
  faults_.push_back(std::move(fault));
}

void FaultInjector::Clear() {
  MutexLock lock(mu_);
  faults_.clear();
}

std::optional<Fault> FaultInjector::Take(const std::string& verb, const std::string& resource) {
  MutexLock lock(mu_);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if ((it->verb != "*" && it->verb != verb) ||
        (it->resource != "*" && it->resource != resource)) {
      continue;
    }
    Fault taken = *it;
    if (--it->count <= 0) faults_.erase(it);
    return taken;
  }
  return std::nullopt;
}

std::vector<Fault> FaultInjector::Pending() const {
  MutexLock lock(mu_);
  return faults_;
}

}  // namespace canhazgpu::kubesim
