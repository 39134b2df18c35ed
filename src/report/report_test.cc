#include <gtest/gtest.h>

#include "report/table.h"

namespace kopt {
namespace {

TEST(Table, AlignsTextLeftAndNumbersRight) {
  Table t({"task", "ms", "verdict"});
  t.AddRow({"01_relu", "1.25", "correct"});
  t.AddRow({"10_long_name", "12.5", "incorrect"});
  std::string s = t.Render();
  EXPECT_EQ(s,
            "task            ms  verdict\n"
            "-----------------------------\n"
            "01_relu       1.25  correct\n"
            "10_long_name  12.5  incorrect\n");
}

TEST(Table, Formats) {
  EXPECT_EQ(FormatMs(1.23456), "1.235");
  EXPECT_EQ(FormatMs(-1), "-");
  EXPECT_EQ(FormatRatio(2.0), "2.00x");
  EXPECT_EQ(FormatRatio(0), "-");
  EXPECT_EQ(FormatPercent(0.875), "88%");
}

}  // namespace
}  // namespace kopt
