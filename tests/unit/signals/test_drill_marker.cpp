// Drill lines (signals/drill_marker.h): the marker's format, its parser on good and broken input,
// the tracker that tells a drill's lines from a real fault's, and the scanner that keeps them out
// of a node's incidents.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/signals_catalog.h"
#include "signals/catalog.h"
#include "signals/correlate.h"
#include "signals/drill_marker.h"
#include "signals/scanner.h"

using namespace cmax::signals;

namespace {

const Catalog& catalog() { return cmax::test::signals_catalog(); }

// The xid79 scenario's lines as a drill writes them (data/drills.json, rendered for drill 1a2b).
const std::vector<std::string> kXid79 = {
    "pcieport 0000:3a:00.0: AER: Uncorrected (Fatal) error received: 0000:3a:00.0",
    "pcieport 0000:3a:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=4321, name=cmaxdrill-1a2b, GPU has fallen off the bus.",
    "NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
};

}  // namespace

TEST(DrillMarker, BeginAndEndRoundTrip) {
  const std::string begin = format_drill_begin("1a2b", "xid79", "gpu-07", 1796448373, kXid79);
  EXPECT_EQ(begin.rfind("cmax-drill: begin drill=1a2b scenario=xid79 node=gpu-07 until=1796448373 lines=", 0), 0u)
      << begin;
  auto mk = parse_drill_marker(begin);
  ASSERT_TRUE(mk) << begin;
  EXPECT_FALSE(mk->end);
  EXPECT_EQ(mk->id, "1a2b");
  EXPECT_EQ(mk->scenario, "xid79");
  EXPECT_EQ(mk->node, "gpu-07");
  EXPECT_EQ(mk->until_unix, 1796448373);
  ASSERT_EQ(mk->lines.size(), kXid79.size());
  for (std::size_t i = 0; i < kXid79.size(); ++i) EXPECT_EQ(mk->lines[i], drill_line_hash(kXid79[i]));

  auto end = parse_drill_marker(format_drill_end("1a2b"));
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->end);
  EXPECT_EQ(end->id, "1a2b");
  // As dmesg and syslog print it: the parser is handed the message with prefixes removed, but
  // finds the marker anywhere in it.
  EXPECT_TRUE(parse_drill_marker("kernel: cmax-drill: end drill=ff00"));
}

TEST(DrillMarker, HashIgnoresTrailingSpaceAndCarriageReturn) {
  EXPECT_EQ(drill_line_hash("NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."),
            drill_line_hash("NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus. \r"));
  EXPECT_NE(drill_line_hash("NVRM: GPU 0000:3b:00.0"), drill_line_hash("NVRM: GPU 0000:3c:00.0"));
}

TEST(DrillMarker, MalformedMarkersAreNotMarkers) {
  for (const char* bad : {
           "cmax-drill: begin drill= scenario=x node=n until=1 lines=00000000",
           "cmax-drill: begin drill=1a2b scenario=x node=n until=1 lines=0000000",     // 7 hex digits
           "cmax-drill: begin drill=1a2b scenario=x node=n until=1 lines=0000000g",
           "cmax-drill: begin drill=1a2b scenario=x node=n until=-5 lines=00000000",
           "cmax-drill: begin drill=1a2b scenario=x node=n lines=00000000",            // no until
           "cmax-drill: begin drill=1a2b scenario=x node=n until=1 lines=00000000,",
           "cmax-drill: begin drill=1a2b! scenario=x node=n until=1 lines=00000000",
           "cmax-drill: begin drill=12345678901234567 scenario=x node=n until=1 lines=00000000",
           "cmax-drill: pause drill=1a2b",
           "cmax-drill: end",
           "cmax-drill: enddrill=1a2b",
           "cmax-drill: end xdrill=1a2b",
           "drill=1a2b",
           "",
       })
    EXPECT_FALSE(parse_drill_marker(bad)) << bad;
}

TEST(DrillMarker, TheTagOfAProcessName) {
  EXPECT_EQ(drill_tag_of("NVRM: Xid (PCI:0000:3b:00): 79, pid=4321, name=cmaxdrill-1a2b, GPU has fallen off the bus."),
            "1a2b");
  EXPECT_EQ(drill_tag_of("watchdog: BUG: soft lockup - CPU#12 stuck for 23s! [cmaxdrill-00ff:4321]"), "00ff");
  EXPECT_EQ(drill_tag_of("INFO: task cmaxdrill-beef:4321 blocked for more than 120 seconds."), "beef");
  EXPECT_FALSE(drill_tag_of("NVRM: Xid (PCI:0000:3b:00): 79, pid=4321, name=python, GPU has fallen off the bus."));
  EXPECT_FALSE(drill_tag_of("name=cmaxdrill-, oops"));
}

TEST(DrillTracker, LinesOfABegunDrillMatchOnceEachAndRealLinesDoNot) {
  DrillTracker t;
  t.on_marker("n1", *parse_drill_marker(format_drill_begin("1a2b", "xid79", "n1", 2000, kXid79)));
  for (const auto& line : kXid79) {
    auto m = t.match("n1", line, 1000);
    ASSERT_TRUE(m) << line;
    EXPECT_EQ(m->id, "1a2b");
    EXPECT_TRUE(m->live);
  }
  // The same untagged text again is a real fault: each fingerprint matches once.
  EXPECT_FALSE(t.match("n1", kXid79[0], 1000));
  // Another node's log: its lines are its own.
  DrillTracker u;
  u.on_marker("n1", *parse_drill_marker(format_drill_begin("1a2b", "xid79", "n1", 2000, kXid79)));
  EXPECT_FALSE(u.match("n2", kXid79[0], 1000));
  // A real fault on another device never matches.
  EXPECT_FALSE(u.match("n1", "NVRM: Xid (PCI:0000:3c:00): 79, pid=1, name=python, GPU has fallen off the bus.", 1000));
}

TEST(DrillTracker, AnEndMarkerOrItsUntilEndsTheDrill) {
  DrillTracker t;
  t.on_marker("n1", *parse_drill_marker(format_drill_begin("1a2b", "xid79", "n1", 2000, kXid79)));
  EXPECT_TRUE(t.live("n1", "1a2b", 1500));
  EXPECT_FALSE(t.live("n1", "1a2b", 2001)) << "past its until";
  t.on_marker("n1", *parse_drill_marker(format_drill_end("1a2b")));
  EXPECT_FALSE(t.live("n1", "1a2b", 1500));
  auto m = t.match("n1", kXid79[2], 1500);
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->live) << "a line of an ended drill is a drill line, not live";
  // A drill whose begin was not read (a log cut before it): nothing says it ended.
  EXPECT_TRUE(t.live("n1", "ffff", 1500));
  auto tagged = t.match("n1", "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=cmaxdrill-ffff, An uncorrectable", 1500);
  ASSERT_TRUE(tagged);
  EXPECT_EQ(tagged->id, "ffff");
  EXPECT_TRUE(tagged->live);
  EXPECT_EQ(t.seen(), std::vector<std::string>{"1a2b"});
}

TEST(DrillTracker, FollowsAtMostABoundedNumberOfDrills) {
  DrillTracker t;
  for (std::size_t i = 0; i < DrillTracker::kMaxOpen + 10; ++i)
    t.on_marker("n1", *parse_drill_marker(format_drill_begin(fmt::format("{:04x}", i), "x", "n1", 0, {"line"})));
  EXPECT_EQ(t.seen().size(), DrillTracker::kMaxOpen + 10);
  // The oldest are forgotten: their lines no longer match by fingerprint.
  int matched = 0;
  while (t.match("n1", "line", 0)) ++matched;
  EXPECT_EQ(matched, static_cast<int>(DrillTracker::kMaxOpen));
}

TEST(ScannerDrills, ADrillsLinesGoToTheirOwnIncidentsNeverTheNodes) {
  std::string log = "[ 100.000000] " + format_drill_begin("1a2b", "xid79", "n1", 0, kXid79) + "\n";
  for (const auto& l : kXid79) log += "[ 100.000100] " + l + "\n";
  log += "[ 100.500000] " + format_drill_end("1a2b") + "\n";
  // A real fault on another GPU afterwards, and the drill's text once more (now a real fault).
  log += "[ 200.000000] NVRM: Xid (PCI:0000:3c:00): 79, pid=7, name=python, GPU has fallen off the bus.\n";
  log += "[ 300.000000] " + kXid79[0] + "\n";
  Correlator real(catalog()), drills(catalog());
  auto scanner = Scanner::create(real, {});
  ASSERT_TRUE(scanner);
  scanner->set_drill_correlator(drills);
  ASSERT_TRUE(scanner->scan_text(log, "n1"));
  EXPECT_EQ(scanner->stats().drill_markers, 2u);
  EXPECT_EQ(scanner->stats().drill_lines, kXid79.size());
  EXPECT_EQ(scanner->drills_seen(), std::vector<std::string>{"1a2b"});
  ASSERT_EQ(real.incidents().size(), 2u);
  EXPECT_EQ(real.incidents()[0].device, "0000:3c:00");
  EXPECT_EQ(real.incidents()[1].kind, Kind::aer_fatal);
  EXPECT_EQ(real.incidents()[1].first_seen, "[ 300.000000]");
  for (const auto& i : real.incidents()) EXPECT_EQ(i.drill, "");
  ASSERT_FALSE(drills.incidents().empty());
  for (const auto& i : drills.incidents()) EXPECT_EQ(i.drill, "1a2b");

  // Without a drill correlator the lines are counted and dropped.
  Correlator only(catalog());
  auto plain = Scanner::create(only, {});
  ASSERT_TRUE(plain);
  ASSERT_TRUE(plain->scan_text(log, "n1"));
  EXPECT_EQ(only.incidents().size(), 2u);
  EXPECT_EQ(plain->stats().drill_lines, kXid79.size());
}

TEST(CorrelatorDrills, TwoDrillsOnOneGpuAreTwoIncidentsApartFromARealOne) {
  Correlator c(catalog());
  const std::string node = "n1";
  auto add = [&](std::string_view line, std::string_view drill) {
    LineInfo info;
    info.message = line;
    Signal sig = *classify(line);
    Event e{&node, &info, &sig, line, drill};
    return c.add(e);
  };
  const std::string xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.";
  add(xid, "aaaa");
  add(xid, "aaaa");
  add(xid, "bbbb");
  add(xid, "");
  ASSERT_EQ(c.incidents().size(), 3u);
  EXPECT_EQ(c.incidents()[0].drill, "aaaa");
  EXPECT_EQ(c.incidents()[0].count, 2u);
  EXPECT_EQ(c.incidents()[1].drill, "bbbb");
  EXPECT_EQ(c.incidents()[2].drill, "");
}

TEST(CorrelatorSamples, AKmsgRecordReadsAsDmesgPrintsIt) {
  Correlator c(catalog());
  const std::string node = "n1";
  const std::string record = "11,386,2400315688,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.";
  LineInfo info = parse_line_prefix(record, 2026);
  Signal sig = *classify(info.message);
  Event e{&node, &info, &sig, record};
  ASSERT_TRUE(c.add(e));
  EXPECT_EQ(c.incidents()[0].sample, "[2400.315688] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.");
}
