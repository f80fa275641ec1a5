// Fault drills in SLA accounting (sla/drills.h) and the as-of time (nothing after now counted),
// computed by hand on the one-rack contract of sla_fixture.h: 18 trays of 4 GPUs, April 2026 of
// 720 h owes 51,840 GPU-h.

#include <gtest/gtest.h>

#include "sla/drills.h"
#include "sla_fixture.h"

namespace cmax::sla {
namespace {

using testing::load;
using testing::rack_contract;

constexpr YearMonth kApril{2026, 4};
constexpr std::int64_t kApril10 = 1775779200;  // 2026-04-10T00:00:00Z

NodeAction action(std::string node, std::string verb, std::string reason, double t, std::string status = "done") {
  return NodeAction{std::move(node), std::move(verb), std::move(status), std::move(reason), t, t};
}

TEST(SlaDrills, TheDrillOfAReason) {
  EXPECT_EQ(drill_of_reason("cmax: aer_fatal 0000:3a:00.0 reboot_node (catalog) [drill 1a2b]"), "1a2b");
  EXPECT_EQ(drill_of_reason("cmax: healthcheck: Xid 79 0000:3b:00 (reboot_node) [drill ff00]"), "ff00");
  EXPECT_EQ(drill_of_reason("cmax: Xid 79 0000:3b:00 reboot_node (catalog)"), "");
  EXPECT_EQ(drill_of_reason("[drill ]"), "");
  EXPECT_EQ(drill_of_reason("[drill 1a2b"), "");
}

TEST(SlaDrills, CmaxdsDrillDrainsAreWindowsClosedByTheNextResume) {
  const std::vector<NodeAction> actions = {
      action("t01", "drain", "cmax: Xid 79 (catalog) [drill 1a2b]", kApril10),
      action("t01", "drain", "cmax: Xid 79 (catalog) [drill 1a2b]", kApril10 + 1, "unchanged"),
      action("t01", "resume", "observed: t01 is back in service", kApril10 + 60),
      action("t02", "drain", "cmax: Xid 79 (catalog)", kApril10),  // a real fault: no window
      action("t03", "drain", "cmax: Xid 79 (catalog) [drill 0042]", kApril10 + 100),  // not resumed yet
      action("t04", "drain", "cmax: Xid 79 (catalog) [drill 0043]", kApril10, "refused"),
  };
  auto w = drill_windows_from_actions(actions);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].node, "t01");
  EXPECT_EQ(w[0].drill, "1a2b");
  EXPECT_EQ(w[0].start_s, kApril10);
  EXPECT_EQ(w[0].end_s, kApril10 + 60);
  EXPECT_EQ(w[1].node, "t03");
  EXPECT_EQ(w[1].end_s, kOpenEnd);
}

TEST(SlaDrills, ADrillRecordGivesAWindowPerNodeInjected) {
  const std::string doc = R"({"schema": "cmax.drill/1", "drill_id": "1a2b", "nodes": [
      {"node": "t01", "injected": [{"t_unix": 1775779200.4, "text": "x"}], "resumed_unix": 1775779265.2},
      {"node": "t02", "injected": [{"t_unix": 1775779300.0, "text": "x"}]},
      {"node": "t03", "error": "inject on t03: srun failed"}]})";
  auto w = drill_windows_from_report(doc, "run/drill.json");
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_EQ(w->size(), 2u);
  EXPECT_EQ((*w)[0].start_s, 1775779200);
  EXPECT_EQ((*w)[0].end_s, 1775779266) << "rounded up: the node was out until then";
  EXPECT_EQ((*w)[0].source, "run/drill.json");
  EXPECT_EQ((*w)[1].end_s, kOpenEnd);
  EXPECT_FALSE(drill_windows_from_report("{", "x"));
  EXPECT_FALSE(drill_windows_from_report(R"({"schema": "cmax.sla/1"})", "x"));
  EXPECT_FALSE(drill_windows_from_report(R"({"schema": "cmax.drill/1", "nodes": 5})", "x"));
  EXPECT_FALSE(drill_windows_from_report(R"({"schema": ["cmax.drill/1"], "nodes": []})", "x"))
      << "a schema of the wrong type is an error, not an exception (fuzz_sla found it)";
}

TEST(SlaDrills, ADrillIsExcludedFromDowntimeAndFromTheTimeOwed) {
  // t01 drained by a drill for 2 h, resumed by cmax drill cleanup (cmaxd saw no resume).
  Contract c = load(rack_contract("node"));
  auto events = intervals_from_actions({action("t01", "drain", "cmax: Xid 79 (catalog) [drill 1a2b]", kApril10)});
  ASSERT_EQ(events.intervals.size(), 1u);
  ASSERT_EQ(events.intervals[0].end_s, kOpenEnd);
  std::vector<DrillWindow> drills = {{"t01", "1a2b", "run/drill.json", kApril10, kApril10 + 7200},
                                     {"gpu-99", "1a2b", "run/drill.json", kApril10, kApril10 + 60}};
  EXPECT_EQ(close_with_drills(events, drills), 1u);
  EXPECT_EQ(events.intervals[0].end_s, kApril10 + 7200) << "the resume the drill record gives ends the drain";
  auto elsewhere = exclude_drills(c, drills, kApril10 + 86400);
  ASSERT_EQ(elsewhere.size(), 1u);
  EXPECT_EQ(elsewhere[0].node, "gpu-99");
  auto w = month_window(c.zone, kApril, kApril);
  ASSERT_TRUE(w);
  const auto rep = compute_sla(std::move(events), c, *w);
  const MonthReport& m = rep.months[0];
  EXPECT_EQ(m.down_gpu_s, 0);
  EXPECT_EQ(m.excluded_gpu_s, 4 * 7200);
  EXPECT_EQ(rep.credit_total, 0);
  EXPECT_TRUE(rep.cancellations.empty());
}

// Issue 35: cleanup resumed t01 at +7200 s (the drill's end marker); cmaxd saw the node back 9 s
// later and closed its drain there. Those 9 s are the drill's, not downtime.
TEST(SlaDrills, ADrillIsExcludedUpToTheResumeTheEventsShowNotItsEndMarker) {
  Contract c = load(rack_contract("node"));
  auto events = intervals_from_actions({action("t01", "drain", "cmax: Xid 79 (catalog) [drill 1a2b]", kApril10 + 1),
                                        action("t01", "resume", "observed: t01 is back in service", kApril10 + 7209),
                                        // A real fault on t02 after a drill there: its downtime stays.
                                        action("t02", "drain", "cmax: Xid 79 (catalog)", kApril10 + 4000),
                                        action("t02", "resume", "observed", kApril10 + 5000)});
  std::vector<DrillWindow> drills = {{"t01", "1a2b", "run/drill.json", kApril10, kApril10 + 7200},
                                     {"t02", "1a2b", "run/drill.json", kApril10, kApril10 + 60}};
  EXPECT_EQ(close_with_drills(events, drills), 0u) << "no drain was open";
  EXPECT_EQ(extend_drills_to_resume(drills, events, c.down_states), 1u);
  EXPECT_EQ(drills[0].end_s, kApril10 + 7209) << "to the observed resume";
  EXPECT_EQ(drills[0].marker_end_s, kApril10 + 7200) << "the drill's own end is kept";
  EXPECT_EQ(drills[1].end_s, kApril10 + 60) << "a drain that began after the drill is not the drill's";
  EXPECT_EQ(drills[1].marker_end_s, kOpenEnd);
  exclude_drills(c, drills, kApril10 + 86400);
  auto w = month_window(c.zone, kApril, kApril);
  ASSERT_TRUE(w);
  const auto rep = compute_sla(std::move(events), c, *w);
  EXPECT_EQ(rep.months[0].down_gpu_s, 4 * 1000) << "only t02's real fault";
  EXPECT_EQ(rep.months[0].excluded_gpu_s, 4 * (7209 + 60));

  // A resume seen long after the drill's end (cmaxd was down) is not taken as the drill's.
  auto late = intervals_from_actions({action("t01", "drain", "x [drill 1a2b]", kApril10 + 1),
                                      action("t01", "resume", "observed", kApril10 + 7200 + kResumeLagMaxS + 1)});
  std::vector<DrillWindow> one = {{"t01", "1a2b", "run/drill.json", kApril10, kApril10 + 7200}};
  EXPECT_EQ(extend_drills_to_resume(one, late, c.down_states), 0u);
  EXPECT_EQ(one[0].end_s, kApril10 + 7200);
}

TEST(SlaAsOf, AnOpenDrainEndsNowNotAtTheMonthsEnd) {
  // t01 drained on 10 April and never resumed; the report is made on 11 April 00:00.
  const Contract c = load(rack_contract("node"));
  auto events = parse_events_csv("t01,2026-04-10T00:00:00Z,,down\n", c.zone);
  ASSERT_TRUE(events);
  auto w = month_window(c.zone, kApril, {2026, 5});
  ASSERT_TRUE(w);
  const std::int64_t as_of = kApril10 + 86400;
  const auto rep = compute_sla(std::move(*events), c, *w, as_of);
  ASSERT_EQ(rep.months.size(), 2u);
  const MonthReport& april = rep.months[0];
  EXPECT_TRUE(april.to_date);
  EXPECT_EQ(april.end_s, as_of);
  EXPECT_EQ(april.down_gpu_s, 4 * 86400) << "one day down, not 21";
  EXPECT_EQ(april.gpu_s, 72LL * (as_of - april.start_s)) << "the month to date";
  const MonthReport& may = rep.months[1];
  EXPECT_TRUE(may.to_date);
  EXPECT_EQ(may.gpu_s, 0) << "nothing of May has happened";
  EXPECT_EQ(may.down_gpu_s, 0);
  EXPECT_EQ(may.availability_percent, 100);
  EXPECT_EQ(rep.anomalies.open_ended.count, 1u);
  EXPECT_NE(rep.anomalies.open_ended.examples[0].find("still open: counted to 2026-04-11T00:00:00Z"), std::string::npos)
      << rep.anomalies.open_ended.examples[0];

  // Without an as-of time (a finished window) the months are whole, as before.
  auto again = parse_events_csv("t01,2026-04-10T00:00:00Z,2026-04-11T00:00:00Z,down\n", c.zone);
  const auto whole = compute_sla(std::move(*again), c, *w);
  EXPECT_FALSE(whole.months[0].to_date);
  EXPECT_EQ(whole.months[0].gpu_s, 72LL * 720 * 3600);
}

}  // namespace
}  // namespace cmax::sla
