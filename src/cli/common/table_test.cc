#include "cli/common/table.h"

#include <gtest/gtest.h>

namespace canhazgpu::cli {
namespace {

TEST(TableTest, AlignsColumnsByDisplayWidth) {
  Table table({"GPU", "STATUS"});
  table.AddRow({{"0"}, {"● AVAILABLE"}});
  table.AddRow({{"12"}, {"x"}});
  EXPECT_EQ(table.Render(),
            "GPU │ STATUS\n"
            "────┼────────────\n"
            "0   │ ● AVAILABLE\n"
            "12  │ x\n");
}

TEST(TableTest, StylesDoNotAffectWidth) {
  Table table({"A", "B"});
  table.AddRow({{"x", MakeStyle(true, "1;32")}, {"y"}});
  EXPECT_EQ(table.Render(), "A │ B\n──┼──\n\033[1;32mx\033[0m │ y\n");
  EXPECT_TRUE(MakeStyle(false, "1").start.empty());
}

}  // namespace
}  // namespace canhazgpu::cli
