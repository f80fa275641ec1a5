// The CSV read in parts on threads and merged must equal the one-pass read exactly: names and
// their indices, intervals in input order, records, and every anomaly count and example.

#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sla/events.h"
#include "sla/parse.h"

namespace cmax::sla {
namespace {

void expect_same_tally(const Tally& a, const Tally& b, const char* what) {
  EXPECT_EQ(a.count, b.count) << what;
  EXPECT_EQ(a.examples, b.examples) << what;
}

void expect_same(const EventSet& a, const EventSet& b, const std::string& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(a.node_names, b.node_names);
  EXPECT_EQ(a.state_names, b.state_names);
  EXPECT_EQ(a.records, b.records);
  ASSERT_EQ(a.intervals.size(), b.intervals.size());
  for (std::size_t i = 0; i < a.intervals.size(); ++i) {
    EXPECT_EQ(a.intervals[i].start_s, b.intervals[i].start_s) << i;
    EXPECT_EQ(a.intervals[i].end_s, b.intervals[i].end_s) << i;
    EXPECT_EQ(a.intervals[i].node, b.intervals[i].node) << i;
    EXPECT_EQ(a.intervals[i].state, b.intervals[i].state) << i;
  }
  const Anomalies &x = a.anomalies, &y = b.anomalies;
  expect_same_tally(x.malformed, y.malformed, "malformed");
  expect_same_tally(x.open_ended, y.open_ended, "open_ended");
  expect_same_tally(x.inverted, y.inverted, "inverted");
  expect_same_tally(x.duplicated, y.duplicated, "duplicated");
  expect_same_tally(x.overlapping, y.overlapping, "overlapping");
  expect_same_tally(x.out_of_order, y.out_of_order, "out_of_order");
  expect_same_tally(x.unknown_node, y.unknown_node, "unknown_node");
  expect_same_tally(x.cluster_events, y.cluster_events, "cluster_events");
  expect_same_tally(x.unmatched, y.unmatched, "unmatched");
  EXPECT_EQ(x.up_intervals, y.up_intervals);
}

// Inputs that stress the part boundaries: header or none, comments and blank lines before the
// header, CRLF, quoted reasons with commas and doubled quotes, more malformed lines than
// examples kept, mixed-case states, repeated nodes, open ends, no newline at the end.
const std::vector<std::string>& samples() {
  static const std::vector<std::string> kSamples = {
      "# exported 2026-04-30\r\n"
      "\r\n"
      "node,start,end,state,reason\r\n"
      "gpu01,2026-04-10T08:00:00Z,2026-04-10T09:00:00Z,down,\"Xid 79, fell off the bus\"\r\n"
      "gpu02,1775808000,,drain\r\n"
      "bad line one\r\n"
      "gpu01,2026-04-10T10:00:00Z,2026-04-10T11:00:00Z,DOWN\r\n"
      "gpu03,1775808000,Unknown,DOWN*,\"said \"\"no\"\", twice\"\r\n"
      "gpu04,soon,1775811600,down\r\n"
      "# a comment between rows\n"
      "gpu05,1775808000,1775811600,\r\n"
      "bad line two\n"
      "\"gpu06,unterminated\n"
      "gpu06,1775808000,later,idle\n"
      "gpu02, 2026-04-11T08:00:00Z , 2026-04-11T09:00:00Z ,Idle,,extra,more\n"
      "bad line three\n"
      "gpu07,2026-04-12 08:00,2026-04-12 09:30,down\n"
      "gpu01,2026-04-13T08:00:00+02:00,open,down",
      "gpu10,1775808000,1775811600,down\n"
      "gpu11,1775808000,1775811600,idle\n"
      "\n"
      "gpu10,1775811600,1775815200,idle\n",
      "# only comments\n#\n\n",
      "node,start,end,state\n",
      "\"node,start,end,state\ngpu01,1775808000,1775811600,down\n",
      "",
  };
  return kSamples;
}

TEST(SlaParseCsvParts, TwoPartsAtEveryByteEqualOnePass) {
  const Zone utc = Zone::utc();
  for (std::size_t k = 0; k < samples().size(); ++k) {
    const std::string& text = samples()[k];
    const auto serial = parse_events_csv(text, utc);
    ASSERT_TRUE(serial.has_value());
    for (std::size_t split = 0; split <= text.size() + 1; ++split) {
      const std::size_t splits[] = {split};
      const auto parts = parse_events_csv_parts(text, utc, splits);
      ASSERT_TRUE(parts.has_value());
      expect_same(*serial, *parts, fmt::format("sample {} split at {}", k, split));
    }
  }
}

TEST(SlaParseCsvParts, ThreeAndMorePartsEqualOnePass) {
  const Zone utc = Zone::utc();
  const std::string& text = samples()[0];
  const auto serial = parse_events_csv(text, utc);
  ASSERT_TRUE(serial.has_value());
  for (std::size_t a = 0; a <= text.size(); a += 13)
    for (std::size_t b = a; b <= text.size(); b += 29) {
      const std::size_t splits[] = {a, b, b + 3, b + 40};
      const auto parts = parse_events_csv_parts(text, utc, splits);
      ASSERT_TRUE(parts.has_value());
      expect_same(*serial, *parts, fmt::format("splits at {}, {}", a, b));
    }
}

TEST(SlaParseCsvParts, LargeInputOnTwoThreadsEqualsOnePass) {
  // About 9 MiB: enough for parse_events_csv_parallel to cut it in two. Time order across many
  // nodes (the name table's worst case), names past the 27 bytes a table slot holds, a malformed
  // row every 50,000 so that the second part reports line numbers of its own.
  std::string text = "node,start,end,state\n";
  for (int i = 0; i < 200'000; ++i) {
    if (i % 50'000 == 49'999) text += "not,a,row\n";
    const int node = (i * 7919) % 20'000;
    text += fmt::format("{}{:05},{},{},{}\n",
                        node % 3 == 0 ? "rack-with-a-very-long-name-0001-tray-" : "n", node,
                        1775808000 + i, 1775808000 + i + 600, i % 2 ? "down" : "IDLE");
  }
  ASSERT_GT(text.size(), std::size_t{8} << 20);
  const Zone utc = Zone::utc();
  const auto serial = parse_events_csv(text, utc);
  const auto parallel = parse_events_csv_parallel(text, utc, 2);
  ASSERT_TRUE(serial.has_value());
  ASSERT_TRUE(parallel.has_value());
  EXPECT_EQ(serial->node_names.size(), 20'000u);
  EXPECT_EQ(serial->anomalies.malformed.count, 4u);
  expect_same(*serial, *parallel, "two threads");
}

TEST(SlaParseCsv, FieldsAtEveryOffsetOfTheScannersBlocks) {
  // The line scanner reads 16 bytes at a time and the text's last bytes one by one: names of
  // every length put commas, "\r" and the newline at every offset of a block, with and without
  // a newline at the end of the text, spaces around fields and extra fields.
  const Zone utc = Zone::utc();
  for (std::size_t len = 1; len <= 40; ++len) {
    const std::string name(len, 'n');
    for (const char* eol : {"\n", "\r\n", ""}) {
      const std::string text =
          "x,1,2,down\n" + name + " ,\t1775808000, 1775811600 ,Down ,why,a,b,c" + eol;
      const auto set = parse_events_csv(text, utc);
      ASSERT_TRUE(set.has_value());
      ASSERT_EQ(set->intervals.size(), 2u) << len;
      EXPECT_EQ(set->node_names[1], name);
      EXPECT_EQ(set->intervals[1].start_s, 1775808000);
      EXPECT_EQ(set->intervals[1].end_s, 1775811600);
      EXPECT_EQ(set->state_names[static_cast<std::size_t>(set->intervals[1].state)], "down");
      EXPECT_EQ(set->anomalies.malformed.count, 0u);
    }
  }
}

TEST(SlaEventSet, AppendReinternsNamesAndSumsAnomalies) {
  EventSet a, b;
  a.intervals.push_back({10, 20, a.node("n1"), a.state("down")});
  a.intervals.push_back({30, 40, a.node("n2"), a.state("idle")});
  a.records = 3;
  for (int i = 0; i < 3; ++i) a.anomalies.malformed.add(fmt::format("a{}", i));
  a.anomalies.up_intervals = 1;
  b.intervals.push_back({50, 60, b.node("n3"), b.state("Drain")});
  b.intervals.push_back({70, 80, b.node("n1"), b.state("down")});
  b.records = 4;
  for (int i = 0; i < 4; ++i) b.anomalies.malformed.add(fmt::format("b{}", i));
  b.anomalies.unknown_node.add("x");
  b.anomalies.up_intervals = 2;

  append_events(a, std::move(b));
  EXPECT_EQ(a.node_names, (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(a.state_names, (std::vector<std::string>{"down", "idle", "drain"}));
  ASSERT_EQ(a.intervals.size(), 4u);
  EXPECT_EQ(a.intervals[2].start_s, 50);
  EXPECT_EQ(a.intervals[2].node, 2);
  EXPECT_EQ(a.intervals[2].state, 2);
  EXPECT_EQ(a.intervals[3].node, 0);
  EXPECT_EQ(a.intervals[3].state, 0);
  EXPECT_EQ(a.records, 7u);
  EXPECT_EQ(a.anomalies.malformed.count, 7u);
  EXPECT_EQ(a.anomalies.malformed.examples,
            (std::vector<std::string>{"a0", "a1", "a2", "b0", "b1"}));
  EXPECT_EQ(a.anomalies.unknown_node.count, 1u);
  EXPECT_EQ(a.anomalies.up_intervals, 3u);
  EXPECT_EQ(a.node("n3"), 2);  // the merged table still finds the appended names
  EXPECT_EQ(a.node("n4"), 3);
}

TEST(SlaEventSet, NameTableTellsApartLongNamesWithACommonPrefix) {
  // A slot keeps a name's length and first 27 bytes: names that share those must still differ.
  EventSet set;
  std::vector<std::string> names;
  const std::string prefix(27, 'p');
  for (int i = 0; i < 3000; ++i) {
    names.push_back(prefix + std::to_string(i));                    // same 27-byte prefix
    names.push_back(std::string(i % 40, 'q') + std::to_string(i));  // lengths across 27/28
    names.push_back(std::string("z\0", 2) + std::to_string(i));     // an embedded NUL
  }
  for (std::size_t i = 0; i < names.size(); ++i)
    ASSERT_EQ(set.node(names[i]), static_cast<std::int32_t>(i));
  for (std::size_t i = names.size(); i-- > 0;)
    EXPECT_EQ(set.node(names[i]), static_cast<std::int32_t>(i));
  EXPECT_EQ(set.node_names, names);
  EXPECT_EQ(set.node(std::string(27, 'p')),
            static_cast<std::int32_t>(names.size()));  // a prefix is new
}

}  // namespace
}  // namespace cmax::sla
