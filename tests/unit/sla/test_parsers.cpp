#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "agent/event_log.h"

#include "sla/parse.h"
#include "sla/timestamp.h"

namespace cmax::sla {
namespace {

// 2026-04-10T08:00:00Z
constexpr std::int64_t kT0 = 1775808000;

TEST(SlaTimestamp, ReadsUnixSecondsIsoWithAndWithoutOffsets) {
  const Zone utc = Zone::utc();
  EXPECT_EQ(parse_timestamp("1775808000", utc), kT0);
  EXPECT_EQ(parse_timestamp("1775808000.75", utc), kT0);
  EXPECT_EQ(parse_timestamp("2026-04-10T08:00:00Z", utc), kT0);
  EXPECT_EQ(parse_timestamp(" 2026-04-10 08:00 ", utc), kT0);
  EXPECT_EQ(parse_timestamp("2026-04-10T10:00:00+02:00", utc), kT0);
  EXPECT_EQ(parse_timestamp("2026-04-10T04:00:00.123-0400", utc), kT0);
  EXPECT_EQ(parse_timestamp("2026-04-10", utc), kT0 - 8 * 3600);
  auto ny = Zone::load("America/New_York");
  ASSERT_TRUE(ny.has_value()) << ny.error().message;
  EXPECT_EQ(parse_timestamp("2026-04-10T04:00:00", *ny), kT0);  // EDT, -4 h
  EXPECT_EQ(parse_timestamp("2026-01-10T03:00:00", *ny), parse_timestamp("2026-01-10T08:00:00Z", utc));  // EST
  for (const char* bad : {"", "yesterday", "2026-13-01", "2026-02-30T00:00:00", "2026-04-10T24:00:00",
                          "2026-04-10T08:00:00+25:00", "-5", "12ab", "2026-04-10X08:00"})
    EXPECT_FALSE(parse_timestamp(bad, utc).has_value()) << bad;
}

TEST(SlaZone, MonthStartsAreLocalMidnightAcrossDst) {
  auto ny = Zone::load("America/New_York");
  ASSERT_TRUE(ny.has_value());
  EXPECT_EQ(ny->month_start(2026, 3), 1772341200);  // 2026-03-01T05:00:00Z (EST)
  EXPECT_EQ(ny->month_start(2026, 4), 1775016000);  // 2026-04-01T04:00:00Z (EDT)
  EXPECT_EQ(ny->format_local(1775016000), "2026-04-01T00:00:00-04:00");
  // 02:30 on 8 March 2026 does not exist; it is read with the offset before (EST).
  EXPECT_EQ(ny->to_utc(days_from_civil(2026, 3, 8) * 86400 + 2 * 3600 + 1800),
            days_from_civil(2026, 3, 8) * 86400 + 7 * 3600 + 1800);
  // 01:30 on 1 November 2026 happens twice; the first (EDT) is taken.
  EXPECT_EQ(ny->to_utc(days_from_civil(2026, 11, 1) * 86400 + 3600 + 1800),
            days_from_civil(2026, 11, 1) * 86400 + 5 * 3600 + 1800);
  EXPECT_FALSE(Zone::load("Mars/Olympus_Mons").has_value());
  EXPECT_FALSE(Zone::load("../etc/passwd").has_value());
}

TEST(SlaParseCsv, HeaderCommentsCrlfQuotedReasonAndOpenEnds) {
  const auto set = parse_events_csv(
      "node,start,end,state,reason\r\n"
      "# exported 2026-04-30\r\n"
      "\r\n"
      "gpu01,2026-04-10T08:00:00Z,2026-04-10T09:00:00Z,down,\"Xid 79, fell off the bus\"\r\n"
      "gpu02,1775808000,,drain\r\n"
      "gpu03,1775808000,Unknown,DOWN*\r\n"
      "gpu04,1775808000,1775811600,\r\n"
      "gpu05,soon,1775811600,down\r\n"
      "gpu06,1775808000\r\n",
      Zone::utc());
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(set->records, 6u);
  ASSERT_EQ(set->intervals.size(), 4u);
  EXPECT_EQ(set->node_names[set->intervals[0].node], "gpu01");
  EXPECT_EQ(set->intervals[0].start_s, kT0);
  EXPECT_EQ(set->intervals[0].end_s, kT0 + 3600);
  EXPECT_EQ(set->intervals[1].end_s, kOpenEnd);
  EXPECT_EQ(set->intervals[2].end_s, kOpenEnd);
  EXPECT_EQ(set->state_names[set->intervals[2].state], "down*");
  EXPECT_EQ(set->state_names[set->intervals[3].state], "down");  // empty state: down
  EXPECT_EQ(set->anomalies.malformed.count, 2u);
  EXPECT_NE(set->anomalies.malformed.examples[0].find("line 8"), std::string::npos);
}

TEST(SlaParseSacctmgr, ParsableOutputWithHostlistsUnknownEndsAndClusterEvents) {
  // sacctmgr -P show event format=NodeName,TimeStart,TimeEnd,State,Reason (local time, UTC here).
  const auto set = parse_sacctmgr_events(
      "NodeName|TimeStart|TimeEnd|State|Reason|\n"
      "gpu[01-03]|2026-04-10T08:00:00|2026-04-10T09:30:00|DOWN|Not responding|\n"
      "gpu07|2026-04-11T00:00:00|Unknown|DRAIN|Xid 79|\n"
      "|2026-04-01T00:00:00|Unknown||Cluster Registered TRES|\n"
      "gpu[09|x|y|DOWN|bad|\n",
      Zone::utc());
  ASSERT_TRUE(set.has_value()) << set.error().message;
  ASSERT_EQ(set->intervals.size(), 4u);
  EXPECT_EQ(set->node_names[set->intervals[0].node], "gpu01");
  EXPECT_EQ(set->node_names[set->intervals[2].node], "gpu03");
  EXPECT_EQ(set->intervals[2].end_s, kT0 + 5400);
  EXPECT_EQ(set->intervals[3].end_s, kOpenEnd);
  EXPECT_EQ(set->anomalies.cluster_events.count, 1u);
  EXPECT_EQ(set->anomalies.malformed.count, 1u);
}

TEST(SlaParseSacctmgr, Parsable2AnyColumnOrderAndNoHeader) {
  const auto a = parse_sacctmgr_events(
      "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
      "c1|n1|2026-04-10T08:00:00|2026-04-10T09:00:00|drain|x|root\n",
      Zone::utc());
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(a->intervals.size(), 1u);
  EXPECT_EQ(a->node_names[0], "n1");
  const auto b = parse_sacctmgr_events("n2|2026-04-10T08:00:00||DOWN|x\n", Zone::utc());
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->intervals.size(), 1u);
  EXPECT_EQ(b->intervals[0].end_s, kOpenEnd);
  EXPECT_FALSE(parse_sacctmgr_events("NodeName|State\nn1|down\n", Zone::utc()).has_value());
  EXPECT_FALSE(parse_sacctmgr_events("just some text\n", Zone::utc()).has_value());
}

TEST(SlaParseJson, ArrayOrIntervalsObject) {
  const auto set = parse_events_json(
      R"({"intervals": [{"node": "n1", "start": "2026-04-10T08:00:00Z", "end": 1775811600, "state": "down"},
                        {"node": "n2", "start": 1775808000, "end": null},
                        {"node": "n3", "start": "later"}, 7]})",
      Zone::utc());
  ASSERT_TRUE(set.has_value());
  ASSERT_EQ(set->intervals.size(), 2u);
  EXPECT_EQ(set->intervals[0].end_s, kT0 + 3600);
  EXPECT_EQ(set->intervals[1].end_s, kOpenEnd);
  EXPECT_EQ(set->anomalies.malformed.count, 2u);
  EXPECT_FALSE(parse_events_json("{\"rows\": []}", Zone::utc()).has_value());
  EXPECT_FALSE(parse_events_json("not json", Zone::utc()).has_value());
}

TEST(SlaCmaxdActions, DrainsAndResumesPairIntoDownIntervals) {
  const std::vector<NodeAction> actions = {
      {"n1", "drain", "done", "Xid 79", 100, 101},   {"n1", "drain", "done", "again", 150, 151},
      {"n2", "drain", "dry_run", "Xid 48", 160, 160}, {"n1", "resume", "done", "", 200, 201},
      {"n2", "resume", "done", "", 210, 211},         {"n3", "reboot", "done", "hung", 300, 420},
      {"n4", "drain", "done", "Xid 94", 500, 501}};
  const EventSet set = intervals_from_actions(actions);
  ASSERT_EQ(set.intervals.size(), 3u);
  EXPECT_EQ(set.intervals[0].start_s, 100);
  EXPECT_EQ(set.intervals[0].end_s, 200);
  EXPECT_EQ(set.intervals[1].end_s, 420);
  EXPECT_EQ(set.intervals[2].end_s, kOpenEnd);
  EXPECT_EQ(set.anomalies.duplicated.count, 1u);
  EXPECT_EQ(set.anomalies.unmatched.count, 1u);
}

TEST(SlaCmaxdDb, ReadsActionsFromTheAgentsDatabase) {
  EXPECT_FALSE(read_cmaxd_db("/nonexistent/cmaxd.db").has_value());
  const auto path = std::filesystem::temp_directory_path() / fmt::format("sla-cmaxd-{}.db", ::getpid());
  {
    auto log = agent::EventLog::open(path.string());
    ASSERT_TRUE(log.has_value()) << log.error().message;
    auto d = log->begin_action("n1|xid|79|0", 0, "drain", "n1", "Xid 79", 1000);
    ASSERT_TRUE(d.has_value());
    ASSERT_TRUE(log->finish_action(*d, "done", "", 1001).has_value());
    auto r = log->begin_action("n1|xid|79|0", 0, "resume", "n1", "", 4600);
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(log->finish_action(*r, "done", "", 4601).has_value());
  }
  auto set = read_cmaxd_db(path.string());
  std::filesystem::remove(path);
  std::filesystem::remove(path.string() + "-wal");
  std::filesystem::remove(path.string() + "-shm");
  ASSERT_TRUE(set.has_value()) << set.error().message;
  ASSERT_EQ(set->intervals.size(), 1u);
  EXPECT_EQ(set->intervals[0].start_s, 1000);
  EXPECT_EQ(set->intervals[0].end_s, 4600);
}

TEST(SlaYearMonth, Parses) {
  EXPECT_EQ(parse_year_month("2026-03"), (YearMonth{2026, 3}));
  EXPECT_EQ(parse_year_month("2026-03-31"), (YearMonth{2026, 3}));
  EXPECT_FALSE(parse_year_month("2026-13").has_value());
  EXPECT_FALSE(parse_year_month("2026-02-30").has_value());
  EXPECT_FALSE(parse_year_month("March").has_value());
}

}  // namespace
}  // namespace cmax::sla
