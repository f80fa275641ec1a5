#include <gtest/gtest.h>

#include "signals/csv.h"

using cmax::signals::CsvRecord;
using cmax::signals::parse_csv;

namespace {

std::vector<std::vector<std::string>> fields(const std::vector<CsvRecord>& records) {
  std::vector<std::vector<std::string>> out;
  for (const auto& r : records) out.push_back(r.fields);
  return out;
}

using Rows = std::vector<std::vector<std::string>>;

}  // namespace

TEST(Csv, PlainRecords) {
  auto r = parse_csv("a,b,c\n1,2,3\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fields(*r), (Rows{{"a", "b", "c"}, {"1", "2", "3"}}));
  EXPECT_EQ((*r)[0].line, 1u);
  EXPECT_EQ((*r)[1].line, 2u);
}

TEST(Csv, QuotedCommaAndDoubledQuote) {
  auto r = parse_csv("x,\"a, b\",\"say \"\"hi\"\"\"\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fields(*r), (Rows{{"x", "a, b", "say \"hi\""}}));
}

TEST(Csv, FieldOfOnlyDoubledQuotes) {
  // The catalog's Xid 154 row starts its last field with three quotes: one opens, two are a quote.
  auto r = parse_csv("1,\"\"\"Xid 154\"\" said \"\"\"\"None\"\"\"\"\"\"\"\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fields(*r), (Rows{{"1", "\"Xid 154\" said \"\"None\"\"\""}}));
}

TEST(Csv, CrlfAndMissingTrailingNewline) {
  auto r = parse_csv("a,b\r\n1,2\r\n3,4");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fields(*r), (Rows{{"a", "b"}, {"1", "2"}, {"3", "4"}}));
  EXPECT_EQ((*r)[2].line, 3u);
}

TEST(Csv, QuotedLineBreaksKeepLineNumbers) {
  auto r = parse_csv("a,\"one\r\ntwo\nthree\"\nnext,row\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fields(*r), (Rows{{"a", "one\r\ntwo\nthree"}, {"next", "row"}}));
  EXPECT_EQ((*r)[1].line, 4u);
}

TEST(Csv, EmptyFields) {
  auto r = parse_csv(",a,,\n\"\",\"\"\n\"\"");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fields(*r), (Rows{{"", "a", "", ""}, {"", ""}, {""}}));
}

TEST(Csv, BlankLinesAndBomSkipped) {
  auto r = parse_csv("\xEF\xBB\xBFh1,h2\n\n\r\nv1,v2\n\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fields(*r), (Rows{{"h1", "h2"}, {"v1", "v2"}}));
  EXPECT_EQ((*r)[1].line, 4u);
  auto empty = parse_csv("");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(Csv, Utf8PassesThrough) {
  auto r = parse_csv("NVIDIA\xC2\xAE,\"driver\xE2\x80\x99s, fault\"\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fields(*r), (Rows{{"NVIDIA\xC2\xAE", "driver\xE2\x80\x99s, fault"}}));
}

TEST(Csv, QuoteInsideUnquotedFieldIsData) {
  auto r = parse_csv("5\" disk,b\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fields(*r), (Rows{{"5\" disk", "b"}}));
}

TEST(Csv, UnterminatedQuoteNamesTheLineItOpened) {
  auto r = parse_csv("a,b\n1,2\n3,\"never\nclosed,4\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("line 3"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("never closed"), std::string::npos) << r.error().message;
}

TEST(Csv, TextAfterClosingQuoteIsAnError) {
  auto r = parse_csv("a,b\n\"x\"y,z\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("line 2"), std::string::npos) << r.error().message;
}
