// Explanation and ShareReport as text and JSON.
#include "core/strings.h"
#include "dra/allocator.h"

namespace canhazgpu::dra {
namespace {

nlohmann::ordered_json ShareJson(const ShareReport& s) {
  nlohmann::ordered_json holders = nlohmann::ordered_json::array();
  for (const auto& [holder, amount] : s.holders)
    holders.push_back({{"holder", holder}, {"amount", FormatQuantity(amount)}});
  return {{"device", s.device},
          {"capacity", s.capacity},
          {"value", FormatQuantity(s.value)},
          {"left", FormatQuantity(s.left)},
          {"needs", FormatQuantity(s.needs)},
          {"holders", holders},
          {"text", s.Text()}};
}

}  // namespace

std::string ShareReport::Text() const {
  // Memory reads "6Gi of 80Gi"; any other capacity names itself.
  std::string what = capacity == "memory" ? "" : StrCat(" ", capacity);
  std::string out =
      StrCat(device, " has ", FormatQuantity(left), " of ", FormatQuantity(value), what, " left");
  if (holders.empty()) return out;
  out += " (";
  for (size_t i = 0; i < holders.size(); ++i) {
    out += StrCat(i == 0 ? "" : ", ", holders[i].first, " ", FormatQuantity(holders[i].second));
  }
  return out + ")";
}

std::string Explanation::Text() const {
  std::string out;
  if (!error.empty()) return StrCat("allocation aborted: ", error, "\n");
  for (const RequestReport& r : requests) {
    out += StrCat("request ", r.request, ": wants ",
                  r.wanted < 0 ? std::string("all matching") : std::to_string(r.wanted), " device",
                  r.wanted == 1 ? "" : "s", "; ", r.matching, " of ", r.devices, " on ", node,
                  " match its selectors, ", r.available, " of them free\n");
    if (r.capacity_rejected > 0) {
      out += StrCat("  ", r.capacity_rejected, " can never supply the requested capacity (",
                    r.capacity_reason, ")\n");
    }
    for (const ShareReport& s : r.short_of_capacity)
      out += StrCat("  ", s.Text(), "; the request needs ", FormatQuantity(s.needs), "\n");
    for (const SelectorReport& s : r.selectors) {
      if (s.rejected == 0) continue;
      // A selector may be 10 KiB over many lines: one bounded line of it.
      out += StrCat("  ", s.source, " selector rejected ", s.rejected, ": ",
                    cel::Excerpt(s.expression, 0, 160), "\n");
      if (s.errors > 0)
        out += StrCat("    ", s.errors, " CEL error(s), first: ", s.first_error, "\n");
    }
    for (const auto& [device, holder] : r.taken)
      out += StrCat("  ", device, " is taken by ", holder, "\n");
    for (const std::string& d : r.counter_blocked) {
      out += StrCat("  ", d, " shares memory slices with a device already taken\n");
    }
    for (const auto& [device, taint] : r.tainted)
      out +=
          StrCat("  ", device, " has the taint ", taint, ", which the request does not tolerate\n");
  }
  for (const std::string& c : unmet_constraints)
    out += StrCat("constraint ", c, " could not be met\n");
  if (search_limit) out += "gave up after the search step limit\n";
  if (never) out += "no device could ever satisfy this request\n";
  return out;
}

nlohmann::ordered_json Explanation::Json() const {
  nlohmann::ordered_json requests_json = nlohmann::ordered_json::array();
  for (const RequestReport& r : requests) {
    nlohmann::ordered_json selectors = nlohmann::ordered_json::array();
    for (const SelectorReport& s : r.selectors) {
      selectors.push_back({{"expression", s.expression},
                           {"source", s.source},
                           {"rejected", s.rejected},
                           {"errors", s.errors},
                           {"first_error", s.first_error}});
    }
    nlohmann::ordered_json taken = nlohmann::ordered_json::array();
    for (const auto& [device, holder] : r.taken)
      taken.push_back({{"device", device}, {"holder", holder}});
    nlohmann::ordered_json tainted = nlohmann::ordered_json::array();
    for (const auto& [device, taint] : r.tainted)
      tainted.push_back({{"device", device}, {"taint", taint}});
    nlohmann::ordered_json shortages = nlohmann::ordered_json::array();
    for (const ShareReport& s : r.short_of_capacity) shortages.push_back(ShareJson(s));
    requests_json.push_back({{"request", r.request},
                             {"wanted", r.wanted},
                             {"devices", r.devices},
                             {"selectors", selectors},
                             {"matching", r.matching},
                             {"taken", taken},
                             {"counter_blocked", r.counter_blocked},
                             {"tainted", tainted},
                             {"capacity_rejected", r.capacity_rejected},
                             {"capacity_reason", r.capacity_reason},
                             {"short_of_capacity", shortages},
                             {"available", r.available}});
  }
  return {{"node", node},
          {"never", never},
          {"error", error},
          {"requests", requests_json},
          {"unmet_constraints", unmet_constraints},
          {"search_limit", search_limit}};
}

}  // namespace canhazgpu::dra
