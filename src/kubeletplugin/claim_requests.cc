#include "kubeletplugin/claim_requests.h"

#include <functional>
#include <set>
#include <vector>

#include "core/strings.h"

namespace canhazgpu::kubeletplugin {
namespace {

// "missing uid, name" for a claim lacking fields, "" for a complete one.
std::string MissingFields(const driver::ClaimRef& claim) {
  std::vector<std::string> missing;
  if (claim.uid.empty()) missing.push_back("uid");
  if (claim.namespace_name.empty()) missing.push_back("namespace");
  if (claim.name.empty()) missing.push_back("name");
  return missing.empty() ? "" : StrCat("missing ", Join(missing, ", "));
}

std::string Describe(const driver::ClaimRef& claim) {
  return StrCat("claim ", claim.namespace_name, "/", claim.name, " (uid ", claim.uid, ")");
}

// Screens `claims`, hands the valid, unique ones to `call`, and completes its
// answer: an incomplete claim gets its error, and a claim the driver left
// out gets one too, since the kubelet would otherwise retry it forever
// without a reason to show.
template <typename Result>
std::map<std::string, Result> RunChecked(
    const std::vector<driver::ClaimRef>& claims,
    const std::function<std::map<std::string, Result>(const std::vector<driver::ClaimRef>&)>& call,
    const std::function<Result(std::string)>& failed) {
  std::vector<driver::ClaimRef> valid;
  std::map<std::string, Result> rejected;
  std::set<std::string> seen;
  for (const driver::ClaimRef& claim : claims) {
    if (std::string missing = MissingFields(claim); !missing.empty()) {
      rejected.emplace(claim.uid, failed(StrCat(Describe(claim), ": ", missing)));
    } else if (seen.insert(claim.uid).second) {
      valid.push_back(claim);
    }
  }
  std::map<std::string, Result> results =
      valid.empty() ? std::map<std::string, Result>{} : call(valid);
  for (const driver::ClaimRef& claim : valid) {
    if (!results.contains(claim.uid)) {
      results.emplace(claim.uid, failed(StrCat(Describe(claim), ": driver returned no result")));
    }
  }
  results.merge(rejected);
  return results;
}

}  // namespace

std::map<std::string, driver::PrepareResult> PrepareClaims(
    driver::NodeService& node, const std::vector<driver::ClaimRef>& claims,
    const driver::CallBounds& bounds) {
  return RunChecked<driver::PrepareResult>(
      claims, [&](const auto& valid) { return node.PrepareClaims(valid, bounds); },
      [](std::string error) { return driver::PrepareResult{.error = std::move(error)}; });
}

std::map<std::string, std::string> UnprepareClaims(driver::NodeService& node,
                                                   const std::vector<driver::ClaimRef>& claims,
                                                   const driver::CallBounds& bounds) {
  return RunChecked<std::string>(
      claims, [&](const auto& valid) { return node.UnprepareClaims(valid, bounds); },
      [](std::string error) { return error; });
}

}  // namespace canhazgpu::kubeletplugin
