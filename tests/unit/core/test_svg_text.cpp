// core::append_xml_text and nice_tick_step, shared by the SVG chart writers.

#include <gtest/gtest.h>

#include <string>

#include "core/svg_text.h"

namespace {

TEST(SvgText, EscapesMarkupControlsAndInvalidUtf8) {
  EXPECT_EQ(cmax::core::xml_text(R"(a<b>&"c"'d')"), "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;");
  EXPECT_EQ(cmax::core::xml_text("tab\there\nline\x01"), "tab here line ");
  EXPECT_EQ(cmax::core::xml_text("h\xc3\xa9llo"), "h\xc3\xa9llo") << "valid UTF-8 passes";
  EXPECT_EQ(cmax::core::xml_text("bad\xff\xc3"), "bad\xEF\xBF\xBD\xEF\xBF\xBD") << "invalid bytes become U+FFFD";
  std::string out = "x";
  cmax::core::append_xml_text(out, "&");
  EXPECT_EQ(out, "x&amp;");
}

TEST(SvgText, TickStepsAreOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_DOUBLE_EQ(cmax::core::nice_tick_step(6), 1);
  EXPECT_DOUBLE_EQ(cmax::core::nice_tick_step(10), 2);
  EXPECT_DOUBLE_EQ(cmax::core::nice_tick_step(25), 5);
  EXPECT_DOUBLE_EQ(cmax::core::nice_tick_step(450), 100);
  for (double top : {0.003, 1.0, 7.7, 123.0, 9e9}) {
    const double step = cmax::core::nice_tick_step(top);
    EXPECT_LE(top / step, 8.0) << top;
    EXPECT_GE(top / step, 1.0) << top;
  }
}

}  // namespace
