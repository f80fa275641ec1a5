// The acceptance cases of issue 10, computed by hand. April 2026 has 30 days = 720 h; rack r1 has
// 72 GPUs, so the month owes 72 * 720 = 51,840 GPU-h and its fee is 51,840 * 2.00 = 103,680.00.

#include <gtest/gtest.h>

#include "sla_fixture.h"

namespace cmax::sla {
namespace {

using testing::load;
using testing::rack_contract;
using testing::run;

constexpr YearMonth kApril{2026, 4};
constexpr double kH = 3600.0;

TEST(SlaCompute, RackCountsAsDownWhileTwoOfEighteenTraysAreDown) {
  // t01 down 08:00-14:00 (6 h), t02 down 10:00-18:00 (8 h) on 10 April.
  // Rack down (>= 2 trays) 10:00-14:00 = 4 h * 72 GPUs = 288 GPU-h.
  // Outside it only the tray itself: t01 08:00-10:00 = 2 h * 4 = 8; t02 14:00-18:00 = 4 h * 4 = 16.
  // Down = 288 + 8 + 16 = 312 GPU-h (the trays' own GPUs inside 10:00-14:00 are not counted again).
  // Availability = 1 - 312 / 51,840 = 99.398148 % < 99.5 -> 10 % credit = 10,368.00.
  const Contract c = load(rack_contract());
  const auto rep = run(c,
                       "t01,2026-04-10T08:00:00Z,2026-04-10T14:00:00Z,down\n"
                       "t02,2026-04-10T10:00:00Z,2026-04-10T18:00:00Z,down\n",
                       kApril, kApril);
  ASSERT_EQ(rep.months.size(), 1u);
  const MonthReport& m = rep.months[0];
  ASSERT_EQ(m.listed.size(), 1u);
  const EntityMonth& r1 = m.listed[0];
  EXPECT_EQ(rep.entity_names[r1.entity], "r1");
  EXPECT_EQ(r1.gpu_s, 51840 * 3600);
  EXPECT_EQ(r1.down_gpu_s, 312 * 3600);
  EXPECT_EQ(r1.rack_down_s, 4 * 3600);
  EXPECT_NEAR(r1.availability_percent, 100.0 * (1.0 - 312.0 / 51840.0), 1e-9);
  EXPECT_NEAR(r1.availability_percent, 99.398148, 1e-6);
  EXPECT_TRUE(r1.below_target);
  EXPECT_EQ(r1.credit_percent, 10);
  EXPECT_NEAR(r1.fee, 103680.0, 1e-6);
  EXPECT_NEAR(r1.credit, 10368.0, 1e-6);
  EXPECT_NEAR(rep.credit_total, 10368.0, 1e-6);
  EXPECT_TRUE(rep.cancellations.empty());
}

TEST(SlaCompute, OneTrayOfEighteenIsOnlyThatTray) {
  // t01 alone 08:00-14:00: 6 h * 4 GPUs = 24 GPU-h; the rack never counts as down.
  const Contract c = load(rack_contract());
  const auto rep = run(c, "t01,2026-04-10T08:00:00Z,2026-04-10T14:00:00Z,down\n", kApril, kApril);
  ASSERT_EQ(rep.months[0].listed.size(), 1u);
  EXPECT_EQ(rep.months[0].listed[0].down_gpu_s, 24 * 3600);
  EXPECT_EQ(rep.months[0].listed[0].rack_down_s, 0);
  EXPECT_EQ(rep.months[0].listed[0].credit, 0);
}

TEST(SlaCompute, WithoutTheRackRuleOnlyTheTraysCount) {
  // Same outage as the first case, rule "none": 6 h * 4 + 8 h * 4 = 56 GPU-h.
  const Contract c = load(rack_contract("rack", R"({"rule": "none"})"));
  const auto rep = run(c,
                       "t01,2026-04-10T08:00:00Z,2026-04-10T14:00:00Z,down\n"
                       "t02,2026-04-10T10:00:00Z,2026-04-10T18:00:00Z,down\n",
                       kApril, kApril);
  EXPECT_EQ(rep.months[0].listed[0].down_gpu_s, 56 * 3600);
}

TEST(SlaCompute, NodeScopeCountsTheRackOutageOnEveryTray) {
  // Node scope, same outage: while the rack is down (10:00-14:00) every tray is down.
  // t01: 6 h; t02: 8 h; t03..t18: 4 h each. Each tray owes 4 * 720 = 2,880 GPU-h.
  // t03: 1 - 16 / 2,880 = 99.444 % -> 10 % of 5,760.00 = 576.00; sixteen such trays.
  // t01: 1 - 24 / 2,880 = 99.1667 % -> 10 %; t02: 1 - 32 / 2,880 = 98.889 % -> 25 % = 1,440.00.
  const Contract c = load(rack_contract("node"));
  const auto rep = run(c,
                       "t01,2026-04-10T08:00:00Z,2026-04-10T14:00:00Z,down\n"
                       "t02,2026-04-10T10:00:00Z,2026-04-10T18:00:00Z,down\n",
                       kApril, kApril);
  const MonthReport& m = rep.months[0];
  ASSERT_EQ(m.listed.size(), 18u);
  EXPECT_EQ(m.listed[0].down_gpu_s, 24 * 3600);
  EXPECT_EQ(m.listed[1].down_gpu_s, 32 * 3600);
  EXPECT_EQ(m.listed[2].down_gpu_s, 16 * 3600);
  EXPECT_EQ(m.down_gpu_s, 312 * 3600);  // the same GPU-hours as the rack scope
  EXPECT_EQ(m.listed[1].credit_percent, 25);
  EXPECT_NEAR(m.listed[2].credit, 576.0, 1e-6);
  EXPECT_NEAR(rep.credit_total, 576.0 * 17 + 1440.0, 1e-6);
}

TEST(SlaCompute, ExclusionThatOverlapsAnOutageRemovesTheOverlap) {
  // t03 down 00:00-06:00 on 20 April; maintenance of rack r1 04:00-08:00.
  // Down = 00:00-04:00 = 4 h * 4 = 16 GPU-h; excluded = 18 trays * 4 GPUs * 4 h = 288 GPU-h.
  // Availability = 1 - 16 / (51,840 - 288) = 1 - 16 / 51,552 = 99.968963 %.
  const Contract c = load(rack_contract("rack", R"({"min_down_nodes": 2})", "UTC",
                                        R"([{"kind": "maintenance", "scope": "rack", "targets": ["r1"],
                                            "start": "2026-04-20T04:00:00Z", "end": "2026-04-20T08:00:00Z"}])"));
  const auto rep = run(c, "t03,2026-04-20T00:00:00Z,2026-04-20T06:00:00Z,down\n", kApril, kApril);
  const EntityMonth& r1 = rep.months[0].listed.at(0);
  EXPECT_EQ(r1.down_gpu_s, 16 * 3600);
  EXPECT_EQ(r1.excluded_gpu_s, 288 * 3600);
  EXPECT_NEAR(r1.availability_percent, 100.0 * (1.0 - 16.0 / 51552.0), 1e-9);
  EXPECT_NEAR(r1.availability_percent, 99.968963, 1e-6);
}

TEST(SlaCompute, TraysDownInsideMaintenanceDoNotTakeTheRackDown) {
  // t01 and t02 both down 04:00-06:00, inside the 04:00-08:00 maintenance: nothing counts.
  const Contract c = load(rack_contract("rack", R"({"min_down_nodes": 2})", "UTC",
                                        R"([{"kind": "force_majeure", "reason": "utility outage",
                                            "start": "2026-04-20T04:00:00Z", "end": "2026-04-20T08:00:00Z"}])"));
  const auto rep = run(c,
                       "t01,2026-04-20T04:00:00Z,2026-04-20T06:00:00Z,down\n"
                       "t02,2026-04-20T04:00:00Z,2026-04-20T06:00:00Z,down\n",
                       kApril, kApril);
  const EntityMonth& r1 = rep.months[0].listed.at(0);
  EXPECT_EQ(r1.down_gpu_s, 0);
  EXPECT_EQ(r1.rack_down_s, 0);
  EXPECT_EQ(r1.excluded_gpu_s, 288 * 3600);
  EXPECT_EQ(r1.availability_percent, 100.0);
}

TEST(SlaCompute, OutageAcrossAMonthBoundaryIsSplitAtLocalMidnight) {
  // New York: t05 down 2026-03-31 22:00 EDT to 2026-04-01 03:00 EDT.
  // March gets 22:00-24:00 = 2 h * 4 = 8 GPU-h, April 00:00-03:00 = 3 h * 4 = 12 GPU-h.
  // March 2026 in New York has 743 h (clocks go forward on 8 March): 72 * 743 = 53,496 GPU-h.
  const Contract c = load(rack_contract("rack", R"({"min_down_nodes": 2})", "America/New_York"));
  const auto rep = run(c, "t05,2026-03-31T22:00:00,2026-04-01T03:00:00-04:00,down\n", {2026, 3}, kApril);
  ASSERT_EQ(rep.months.size(), 2u);
  EXPECT_EQ(rep.months[0].end_s - rep.months[0].start_s, 743 * 3600);
  EXPECT_EQ(rep.months[0].listed.at(0).down_gpu_s, 8 * 3600);
  EXPECT_EQ(rep.months[0].listed.at(0).gpu_s, 53496 * 3600);
  EXPECT_EQ(rep.months[1].listed.at(0).down_gpu_s, 12 * 3600);
  EXPECT_EQ(rep.months[1].start_s, 1775016000);  // 2026-04-01T00:00:00-04:00
}

TEST(SlaCompute, EventWithNoEndIsDownToTheWindowsEndAndReported) {
  // t07 down from 29 April 00:00 UTC, no end; the window ends 1 May 00:00: 48 h * 4 = 192 GPU-h.
  // Availability = 1 - 192 / 51,840 = 99.62963 %.
  const Contract c = load(rack_contract());
  const auto rep = run(c, "t07,2026-04-29T00:00:00Z,,down,gpu fell off the bus\n", kApril, kApril);
  EXPECT_EQ(rep.anomalies.open_ended.count, 1u);
  ASSERT_EQ(rep.anomalies.open_ended.examples.size(), 1u);
  EXPECT_NE(rep.anomalies.open_ended.examples[0].find("2026-05-01T00:00:00Z"), std::string::npos);
  const EntityMonth& r1 = rep.months[0].listed.at(0);
  EXPECT_EQ(r1.down_gpu_s, 192 * 3600);
  EXPECT_NEAR(r1.availability_percent, 100.0 * (1.0 - 192.0 / 51840.0), 1e-9);
}

TEST(SlaCompute, CreditTierBoundaryAndCancellationRights) {
  // The whole rack down for 3 days (all 18 trays, 72 h): 72 GPUs * 72 h = 5,184 GPU-h;
  // availability = 1 - 5,184 / 51,840 = 90.0 % exactly: not below 90, so the 95 % tier: 50 %.
  // 90 % < 95 % gives a cancellation right.
  const Contract c = load(rack_contract("rack", R"({"rule": "any"})"));
  const auto rep = run(c, "t01,2026-04-01T00:00:00Z,2026-04-04T00:00:00Z,down\n", kApril, kApril);
  const EntityMonth& r1 = rep.months[0].listed.at(0);
  EXPECT_EQ(r1.down_gpu_s, 5184 * 3600);
  EXPECT_NEAR(r1.availability_percent, 90.0, 1e-9);
  EXPECT_EQ(r1.credit_percent, 50);
  EXPECT_NEAR(r1.credit, 51840.0, 1e-6);
  ASSERT_EQ(rep.cancellations.size(), 1u);
  EXPECT_EQ(rep.cancellations[0].rule, "below_percent");
}

TEST(SlaCompute, TwoMonthsInARowBelowTargetGiveACancellationRight) {
  // 4 h of rack outage in each of April and May (31 days): below 99.5 % both months.
  const Contract c = load(rack_contract("rack", R"({"rule": "any"})"));
  const auto rep = run(c,
                       "t01,2026-04-02T00:00:00Z,2026-04-02T04:00:00Z,down\n"
                       "t01,2026-05-02T00:00:00Z,2026-05-02T04:00:00Z,down\n",
                       kApril, {2026, 5});
  ASSERT_EQ(rep.cancellations.size(), 1u);
  EXPECT_EQ(rep.cancellations[0].rule, "consecutive_months_below_target");
  EXPECT_EQ(rep.cancellations[0].month, 1u);
}

TEST(SlaCompute, SiteScopeSumsItsRacks) {
  const Contract c = load(rack_contract("site"));
  const auto rep = run(c,
                       "t01,2026-04-10T08:00:00Z,2026-04-10T14:00:00Z,down\n"
                       "t02,2026-04-10T10:00:00Z,2026-04-10T18:00:00Z,down\n",
                       kApril, kApril);
  ASSERT_EQ(rep.entity_names.size(), 1u);
  EXPECT_EQ(rep.entity_names[0], "s1");
  EXPECT_EQ(rep.months[0].listed.at(0).down_gpu_s, 312 * 3600);
}

TEST(SlaCompute, AnomaliesAreCountedAndTheRestStillComputed) {
  // Input order: t01 10:00-12:00, t01 again (duplicate), t01 11:00-13:00 (overlap -> 10:00-13:00),
  // t01 08:00-09:00 (out of order), t02 inverted, t99 unknown, a malformed line, an "idle" row.
  // Down: t01 10:00-13:00 (3 h) + 08:00-09:00 (1 h) = 4 h * 4 = 16 GPU-h.
  const Contract c = load(rack_contract());
  const auto rep = run(c,
                       "node,start,end,state,reason\n"
                       "t01,2026-04-10T10:00:00Z,2026-04-10T12:00:00Z,down\n"
                       "t01,2026-04-10T10:00:00Z,2026-04-10T12:00:00Z,down\n"
                       "t01,2026-04-10T11:00:00Z,2026-04-10T13:00:00Z,DRAIN\n"
                       "t01,2026-04-10T08:00:00Z,2026-04-10T09:00:00Z,IDLE+DRAIN\n"
                       "t02,2026-04-10T12:00:00Z,2026-04-10T11:00:00Z,down\n"
                       "t99,2026-04-10T12:00:00Z,2026-04-10T13:00:00Z,down\n"
                       "garbage line\n"
                       "t03,2026-04-10T12:00:00Z,2026-04-10T13:00:00Z,idle\n",
                       kApril, kApril);
  EXPECT_EQ(rep.anomalies.duplicated.count, 1u);
  EXPECT_EQ(rep.anomalies.overlapping.count, 1u);
  EXPECT_EQ(rep.anomalies.out_of_order.count, 1u);
  EXPECT_EQ(rep.anomalies.inverted.count, 1u);
  EXPECT_EQ(rep.anomalies.unknown_node.count, 1u);
  EXPECT_EQ(rep.anomalies.malformed.count, 1u);
  EXPECT_EQ(rep.anomalies.up_intervals, 1u);
  EXPECT_EQ(rep.down_intervals, 2u);
  EXPECT_EQ(rep.months[0].listed.at(0).down_gpu_s, 16 * 3600);
}

TEST(SlaCompute, DefaultWindowSpansTheEventsMonths) {
  const Contract c = load(rack_contract());
  auto events = parse_events_csv("t01,2026-02-27T00:00:00Z,2026-03-02T00:00:00Z,down\n", c.zone);
  ASSERT_TRUE(events.has_value());
  auto w = default_window(*events, c.zone);
  ASSERT_TRUE(w.has_value());
  ASSERT_EQ(w->months.size(), 2u);
  EXPECT_EQ(w->months[0], (YearMonth{2026, 2}));
  const auto rep = compute_sla(std::move(*events), c, *w);
  EXPECT_EQ(rep.months[0].down_gpu_s, 2 * 24 * 4 * 3600);  // 27-28 Feb
  EXPECT_EQ(rep.months[1].down_gpu_s, 24 * 4 * 3600);      // 1 March
  (void)kH;
}

}  // namespace
}  // namespace cmax::sla
