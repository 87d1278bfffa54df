#include "cli/canhazgpu/report_view.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_format.h"
#include "cli/common/table.h"
#include "core/duration.h"
#include "core/strings.h"

namespace canhazgpu::cli {

std::vector<int64_t> RoundKeepingSum(const std::vector<double>& values) {
  std::vector<int64_t> out;
  std::vector<std::pair<double, size_t>> remainders;  // how much was cut, index
  double sum = 0;
  int64_t floors = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = std::max(0.0, values[i]);
    sum += v;
    out.push_back(static_cast<int64_t>(std::floor(v)));
    floors += out.back();
    remainders.emplace_back(v - std::floor(v), i);
  }
  // Largest cut first; among equal cuts, the earlier value.
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  int64_t missing = static_cast<int64_t>(std::llround(sum)) - floors;
  for (size_t k = 0; k < remainders.size() && missing > 0; ++k, --missing) {
    ++out[remainders[k].second];
  }
  return out;
}

namespace {

constexpr double kMsPerTenthHour = 360'000.0;

std::string Tenths(int64_t tenths) { return absl::StrFormat("%d.%d", tenths / 10, tenths % 10); }

// The report's numbers as printed: hours in tenths, shares in percent.
struct PrintedRow {
  int64_t run = 0, manual = 0, k8s = 0;  // tenths of GPU-hours
  int64_t shared = 0;                    // of their sum, from shares
  int64_t total() const { return run + manual + k8s; }
};

PrintedRow Printed(const alloc::UserUsage& u) {
  std::vector<int64_t> parts = RoundKeepingSum({static_cast<double>(u.run_ms) / kMsPerTenthHour,
                                                static_cast<double>(u.manual_ms) / kMsPerTenthHour,
                                                static_cast<double>(u.k8s_ms) / kMsPerTenthHour});
  // Rounded alone: a part of the total, never more than it as printed.
  const int64_t shared = std::min(std::llround(static_cast<double>(u.shared_ms) / kMsPerTenthHour),
                                  static_cast<long long>(parts[0] + parts[1] + parts[2]));
  return {parts[0], parts[1], parts[2], shared};
}

// Busy, idle and unknown as whole percent of `u`'s time, adding up to 100.
std::vector<std::string> Shares(const alloc::UserUsage& u) {
  const int64_t t = u.total_ms();
  if (t <= 0) return {"-", "-", "-"};
  auto percent = [t](int64_t part) { return 100.0 * static_cast<double>(part) / t; };
  std::vector<int64_t> p = RoundKeepingSum(
      {percent(u.split.busy_ms), percent(u.split.idle_ms), percent(u.split.unknown_ms)});
  return {StrCat(p[0], "%"), StrCat(p[1], "%"), StrCat(p[2], "%")};
}

std::string Percent(double part, double whole) {
  return whole > 0 ? absl::StrFormat("%.0f%%", 100.0 * part / whole) : std::string("-");
}

std::string Day(TimePoint t) { return FormatTimestamp(t).substr(0, 10); }

}  // namespace

std::string ReportText(const alloc::UsageReport& r, int days, bool color) {
  std::string out = StrCat("GPU usage ", Day(r.from), " to ", Day(r.to), " (", days,
                           days == 1 ? " day" : " days", "), ", r.gpu_count, " GPUs\n\n");
  if (r.users.empty()) return out + "No reservations in this period.\n";
  std::vector<PrintedRow> rows;
  PrintedRow sum;
  for (const alloc::UserUsage& u : r.users) {
    rows.push_back(Printed(u));
    sum.run += rows.back().run;
    sum.manual += rows.back().manual;
    sum.k8s += rows.back().k8s;
    sum.shared += rows.back().shared;
  }
  // K8S only on hosts whose GPUs served Kubernetes claims in the period;
  // FROM SHARES only where GPUs were shared by memory (ADR 0018): a report
  // without either reads as it always did.
  const bool k8s = r.total.k8s_ms > 0;
  const bool from_shares = r.total.shared_ms > 0;
  std::vector<std::string> headers = {"USER", "GPU-HOURS", "", "RUN", "MANUAL"};
  if (k8s) headers.push_back("K8S");
  if (from_shares) headers.push_back("FROM SHARES");
  for (const char* h : {"BUSY", "IDLE", "UNKNOWN", "RESERVATIONS", "LONGEST"}) headers.push_back(h);
  Table table(headers, MakeStyle(color, "1;36"));
  const int64_t top = std::max<int64_t>(1, r.users.front().total_ms());
  Style bar_style = MakeStyle(color, "34");
  auto row = [&](const alloc::UserUsage& u, const PrintedRow& p, bool with_bar) {
    std::string bar;
    if (with_bar) {
      constexpr int kCells = 20;
      int filled = static_cast<int>(static_cast<double>(u.total_ms()) / top * kCells + 0.5);
      if (u.total_ms() > 0 && filled == 0) filled = 1;
      for (int i = 0; i < kCells; ++i) bar += i < filled ? "█" : " ";
    }
    std::vector<Cell> cells = {
        {u.user}, {Tenths(p.total())}, {bar, bar_style}, {Tenths(p.run)}, {Tenths(p.manual)}};
    if (k8s) cells.push_back({Tenths(p.k8s)});
    if (from_shares) cells.push_back({Tenths(p.shared)});
    for (std::string& share : Shares(u)) cells.push_back({std::move(share)});
    cells.push_back({std::to_string(u.reservations)});
    cells.push_back({FormatDuration(Duration(u.longest_ms))});
    table.AddRow(std::move(cells));
  };
  for (size_t i = 0; i < r.users.size(); ++i) row(r.users[i], rows[i], true);
  row(r.total, sum, false);
  out += table.Render();
  const alloc::UserUsage& t = r.total;
  const std::vector<std::string> shares = Shares(t);
  const double available_tenths = static_cast<double>(r.available_ms) / kMsPerTenthHour;
  out += absl::StrFormat(
      "\nReserved %s of %.1f available GPU-hours (%s). Of the reserved time: %s busy, %s idle, "
      "%s unknown (no usage samples).\n",
      Tenths(sum.total()), available_tenths / 10.0,
      Percent(static_cast<double>(t.total_ms()), static_cast<double>(r.available_ms)), shares[0],
      shares[1], shares[2]);
  if (from_shares) {
    out += StrCat("Of the reserved GPU-hours, ", Tenths(sum.shared),
                  " came from shares of a GPU's memory (FROM SHARES), each counted as its part "
                  "of the GPU: its memory over the GPU's shareable memory.\n");
  }
  return out;
}

}  // namespace canhazgpu::cli
