#include "cli/common/table.h"

#include <gtest/gtest.h>

#include "core/strings.h"

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

// Issue 33: a failed cache item's message made one 1,500-column line.
TEST(TableTest, FitLastColumnKeepsEveryLineWithinTheWidth) {
  Table table({"ITEM", "NODES"});
  table.AddRow({{"vllm-image"}, {"failed on node-0: " + std::string(1500, 'x')}});
  table.AddRow({{"model"}, {"ready"}});
  table.FitLastColumn(100);
  EXPECT_EQ(table.Width(), 100u);
  // The split's views point into `rendered`, which must outlive them.
  const std::string rendered = table.Render();
  for (std::string_view line : Split(rendered, '\n'))
    EXPECT_LE(DisplayWidth(std::string(line)), 100u);
  EXPECT_NE(rendered.find("│ failed on node-0: xxx"), std::string::npos);
  // Narrow enough already: nothing is cut; and never below the minimum.
  Table narrow({"A", "B"});
  narrow.AddRow({{"a"}, {"short"}});
  narrow.FitLastColumn(100);
  EXPECT_EQ(narrow.Render(), "A │ B\n──┼──────\na │ short\n");
  Table wide({std::string(90, 'A'), "B"});
  wide.AddRow({{"a"}, {std::string(50, 'b')}});
  wide.FitLastColumn(100, 20);
  EXPECT_EQ(wide.Width(), 90u + 3 + 20);
}

TEST(TableTest, AColumnWithAMaximumIsCutWithAnEllipsis) {
  Table table({"GPU", "DETAILS", "NOTE"});
  table.AddRow({{"0"}, {"expires in 0h 29m 59s"}, {"training the big one"}});
  table.AddRow({{"1"}, {"never used"}, {"é€ unicode"}});
  table.SetMaxWidth(1, 12);
  table.SetMaxWidth(2, 6);
  EXPECT_EQ(table.Render(),
            "GPU │ DETAILS      │ NOTE\n"
            "────┼──────────────┼───────\n"
            "0   │ expires in … │ train…\n"
            "1   │ never used   │ é€ un…\n");
  EXPECT_EQ(table.Width(), 3u + 3 + 12 + 3 + 6);
  // Headers are never cut; a limit under the header's width is the header's.
  table.SetMaxWidth(2, 2);
  EXPECT_NE(table.Render().find("│ NOTE\n"), std::string::npos);
  EXPECT_NE(table.Render().find("│ tra…\n"), std::string::npos) << table.Render();
}

}  // namespace
}  // namespace canhazgpu::cli
