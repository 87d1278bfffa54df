#include "cli/canhazgpu/report_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "core/strings.h"

namespace canhazgpu::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kHour = 3'600'000;

TEST(RoundKeepingSumTest, PartsAddUpToTheRoundedSum) {
  // 0.4 + 0.4 + 0.4 = 1.2: rounded alone they print 0 + 0 + 0 beside 1.
  EXPECT_THAT(RoundKeepingSum({0.4, 0.4, 0.4}), ElementsAre(1, 0, 0));
  EXPECT_THAT(RoundKeepingSum({1.6, 2.7, 0.7}), ElementsAre(1, 3, 1));
  EXPECT_THAT(RoundKeepingSum({33.3, 33.3, 33.4}), ElementsAre(33, 33, 34));
  EXPECT_THAT(RoundKeepingSum({2.0, 0.0, 5.0}), ElementsAre(2, 0, 5));
  EXPECT_THAT(RoundKeepingSum({-1.0, 0.5}), ElementsAre(0, 1));
  EXPECT_THAT(RoundKeepingSum({}), ElementsAre());
}

alloc::UserUsage User(const std::string& name, double run_h, double manual_h, double k8s_h) {
  alloc::UserUsage u{.user = name,
                     .run_ms = static_cast<int64_t>(run_h * kHour),
                     .manual_ms = static_cast<int64_t>(manual_h * kHour),
                     .k8s_ms = static_cast<int64_t>(k8s_h * kHour)};
  u.split.busy_ms = u.total_ms() / 3;
  u.split.idle_ms = u.total_ms() / 3;
  u.split.unknown_ms = u.total_ms() - 2 * (u.total_ms() / 3);
  u.reservations = 2;
  return u;
}

// The table's cells by user and header.
std::map<std::string, std::map<std::string, std::string>> Cells(const std::string& text) {
  std::vector<std::string> headers;
  std::map<std::string, std::map<std::string, std::string>> out;
  for (std::string_view line : Split(text, '\n')) {
    if (line.find("│") == std::string_view::npos) continue;
    std::vector<std::string> cells;
    size_t start = 0;
    for (size_t at; (at = line.find("│", start)) != std::string_view::npos; start = at + 3) {
      cells.emplace_back(Trim(line.substr(start, at - start)));
    }
    cells.emplace_back(Trim(line.substr(start)));
    if (headers.empty()) {
      headers = cells;
      continue;
    }
    for (size_t i = 0; i < cells.size() && i < headers.size(); ++i) {
      out[cells[0]][headers[i]] = cells[i];
    }
  }
  return out;
}

double Number(const std::string& cell) { return std::stod(cell); }

TEST(ReportTextTest, EveryRowsPartsAddUpToItsTotalAndTheTotalRowToTheRows) {
  alloc::UsageReport report{.gpu_count = 4, .available_ms = 4 * 720 * kHour};
  report.users = {User("alice", 0.04, 0.04, 0.04), User("bob", 1.26, 0.26, 0.0),
                  User("carol", 0.05, 0.05, 0.05)};
  for (const alloc::UserUsage& u : report.users) {
    report.total.run_ms += u.run_ms;
    report.total.manual_ms += u.manual_ms;
    report.total.k8s_ms += u.k8s_ms;
    report.total.split.busy_ms += u.split.busy_ms;
    report.total.split.idle_ms += u.split.idle_ms;
    report.total.split.unknown_ms += u.split.unknown_ms;
  }
  report.total.user = "TOTAL";
  const std::string text = ReportText(report, 30, false);
  auto cells = Cells(text);
  ASSERT_EQ(cells.size(), 4u) << text;
  std::map<std::string, double> column_sums;
  for (const auto& [user, row] : cells) {
    const double parts = Number(row.at("RUN")) + Number(row.at("MANUAL")) + Number(row.at("K8S"));
    EXPECT_NEAR(parts, Number(row.at("GPU-HOURS")), 1e-9) << user << "\n" << text;
    const double shares =
        Number(row.at("BUSY")) + Number(row.at("IDLE")) + Number(row.at("UNKNOWN"));
    EXPECT_NEAR(shares, 100, 1e-9) << user << "\n" << text;
    if (user == "TOTAL") continue;
    for (const char* h : {"GPU-HOURS", "RUN", "MANUAL", "K8S"}) column_sums[h] += Number(row.at(h));
  }
  for (const auto& [header, sum] : column_sums) {
    EXPECT_NEAR(Number(cells["TOTAL"][header]), sum, 1e-9) << header << "\n" << text;
  }
  EXPECT_THAT(text, HasSubstr(StrCat("Reserved ", cells["TOTAL"]["GPU-HOURS"], " of 2880.0")));
}

// Shares of GPUs (ADR 0018) get a FROM SHARES column (a part of
// GPU-HOURS, adding up like the others) and a line saying how they count; a
// report without shares has neither.
TEST(ReportTextTest, SharesHaveTheirOwnColumnAndLine) {
  alloc::UsageReport report{.gpu_count = 2, .available_ms = 2 * 24 * kHour};
  report.users = {User("alice", 1.0, 0.125, 0.0), User("bob", 0.0, 0.5, 0.0)};
  report.users[0].shared_ms = kHour / 8;
  report.users[1].shared_ms = kHour / 2;
  for (const alloc::UserUsage& u : report.users) {
    report.total.run_ms += u.run_ms;
    report.total.manual_ms += u.manual_ms;
    report.total.shared_ms += u.shared_ms;
    report.total.split.unknown_ms += u.total_ms();
  }
  report.total.user = "TOTAL";
  const std::string text = ReportText(report, 1, false);
  auto cells = Cells(text);
  ASSERT_EQ(cells.size(), 3u) << text;
  EXPECT_EQ(cells["alice"]["FROM SHARES"], "0.1");
  EXPECT_EQ(cells["bob"]["FROM SHARES"], "0.5");
  EXPECT_EQ(cells["TOTAL"]["FROM SHARES"], "0.6");
  EXPECT_THAT(text, HasSubstr("\nOf the reserved GPU-hours, 0.6 came from shares of a GPU's "
                              "memory (FROM SHARES), each counted as its part of the GPU: its "
                              "memory over the GPU's shareable memory.\n"));

  for (alloc::UserUsage& u : report.users) u.shared_ms = 0;
  report.total.shared_ms = 0;
  const std::string whole = ReportText(report, 1, false);
  EXPECT_THAT(whole, Not(HasSubstr("SHARES")));
  EXPECT_THAT(whole, Not(HasSubstr("came from shares")));
}

TEST(ReportTextTest, AnEmptyPeriodSaysSo) {
  alloc::UsageReport report{.gpu_count = 2};
  EXPECT_THAT(ReportText(report, 1, false), HasSubstr("(1 day), 2 GPUs\n\nNo reservations"));
}

}  // namespace
}  // namespace canhazgpu::cli
