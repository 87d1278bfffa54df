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

// Issue 14: a cell holds another user's bytes; it stays one line of text.
TEST(TableTest, CellsAreEscapedAndStayOnOneLine) {
  Table table({"USER", "NOTE"});
  table.AddRow({{"bob"}, {"a\nb\x1b[2J\t\xe9"}});
  table.AddRow({{"al"}, {"x"}});
  EXPECT_EQ(table.Render(),
            "USER │ NOTE\n"
            "─────┼────────────────\n"
            "bob  │ a\\nb\\e[2J\\t\\xe9\n"
            "al   │ x\n");
}

TEST(TableTest, DisplayWidthSkipsColourSequences) {
  EXPECT_EQ(DisplayWidth("\033[1;32m\xe2\x97\x8f ok\033[0m"), 4u);
  EXPECT_EQ(DisplayWidth("\\e[2J"), 5u);
}

}  // namespace
}  // namespace canhazgpu::cli
