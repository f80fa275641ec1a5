// render_json writes its document with JsonOut instead of building an nlohmann tree; the bytes
// must stay those of the tree's dump(2). The tree rendering it replaced is kept here as the
// reference.

#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sla/json_out.h"
#include "sla/report.h"
#include "sla_fixture.h"

namespace cmax::sla {
namespace {

using ordered = nlohmann::ordered_json;

double hours(std::int64_t s) { return static_cast<double>(s) / 3600.0; }
double round_to(double v, int digits) {
  const double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}
std::string month_name(YearMonth ym) { return fmt::format("{:04}-{:02}", ym.year, ym.month); }
ordered tally(const Tally& t) { return ordered{{"count", t.count}, {"examples", t.examples}}; }

// The nlohmann rendering render_json had before (2026-12), unchanged.
std::string reference_render_json(const SlaReport& rep, const Contract& c, const Window& w,
                                  const InputInfo& in) {
  ordered doc;
  doc["schema"] = "cmax.sla/1";
  ordered rack_rule = c.rack_down_min_nodes == kAllNodes ? ordered("all")
                      : c.rack_down_min_nodes == 0       ? ordered(nullptr)
                                                         : ordered(c.rack_down_min_nodes);
  doc["contract"] = {{"name", c.name},
                     {"scope", std::string(scope_name(c.scope))},
                     {"time_zone", c.zone.name()},
                     {"availability_target_percent", c.target_percent},
                     {"rack_down_min_nodes", rack_rule},
                     {"nodes", c.topology.node_names.size()},
                     {"racks", c.topology.rack_names.size()},
                     {"sites", c.topology.site_names.size()},
                     {"exclusions", c.exclusions.size()},
                     {"currency", c.currency}};
  doc["window"] = {{"from", c.zone.format_local(w.from_s())},
                   {"to", c.zone.format_local(w.to_s())},
                   {"months", w.months.size()},
                   {"source", in.window_from_flags ? "flags" : "events"},
                   {"as_of", rep.as_of_s == kOpenEnd ? ordered(nullptr) : ordered(c.zone.format_local(rep.as_of_s))}};
  ordered drills = ordered::array();
  for (const auto* list : {&in.drills, &in.drills_elsewhere})
    for (const DrillWindow& d : *list)
      drills.push_back({{"node", d.node},
                        {"drill", d.drill},
                        {"source", d.source},
                        {"start", c.zone.format_local(d.start_s)},
                        {"end", d.end_s == kOpenEnd ? ordered(nullptr) : ordered(c.zone.format_local(d.end_s))},
                        {"drill_end", d.marker_end_s == kOpenEnd ? ordered(nullptr)
                                                                 : ordered(c.zone.format_local(d.marker_end_s))},
                        {"excluded", list == &in.drills}});
  doc["drills"] = drills;
  const Anomalies& a = rep.anomalies;
  doc["input"] = {{"format", in.format},
                  {"path", in.path},
                  {"records", rep.records},
                  {"down_intervals", rep.down_intervals},
                  {"up_intervals", a.up_intervals},
                  {"open_ended_until", c.zone.format_local(std::min(w.to_s(), rep.as_of_s))},
                  {"closed_by_drill_records", in.closed_by_drills},
                  {"anomalies",
                   {{"malformed", tally(a.malformed)},
                    {"open_ended", tally(a.open_ended)},
                    {"inverted", tally(a.inverted)},
                    {"duplicated", tally(a.duplicated)},
                    {"overlapping", tally(a.overlapping)},
                    {"out_of_order", tally(a.out_of_order)},
                    {"unknown_node", tally(a.unknown_node)},
                    {"cluster_events", tally(a.cluster_events)},
                    {"unmatched_resume", tally(a.unmatched)}}}};
  ordered months = ordered::array();
  for (const MonthReport& m : rep.months) {
    ordered listed = ordered::array();
    for (const EntityMonth& e : m.listed)
      listed.push_back({{"name", rep.entity_names[static_cast<std::size_t>(e.entity)]},
                        {"gpus", e.gpus},
                        {"gpu_hours", round_to(hours(e.gpu_s), 4)},
                        {"excluded_gpu_hours", round_to(hours(e.excluded_gpu_s), 4)},
                        {"down_gpu_hours", round_to(hours(e.down_gpu_s), 4)},
                        {"rack_down_hours", round_to(hours(e.rack_down_s), 4)},
                        {"availability_percent", round_to(e.availability_percent, 6)},
                        {"below_target", e.below_target},
                        {"credit_percent", e.credit_percent},
                        {"fee", round_to(e.fee, 2)},
                        {"credit", round_to(e.credit, 2)}});
    months.push_back({{"month", month_name(m.month)},
                      {"start", c.zone.format_local(m.start_s)},
                      {"end", c.zone.format_local(m.end_s)},
                      {"hours", round_to(hours(m.end_s - m.start_s), 4)},
                      {"to_date", m.to_date},
                      {"totals",
                       {{"entities", m.entities},
                        {"with_downtime", m.with_downtime},
                        {"below_target", m.below_target},
                        {"credited", m.credited},
                        {"gpu_hours", round_to(hours(m.gpu_s), 4)},
                        {"excluded_gpu_hours", round_to(hours(m.excluded_gpu_s), 4)},
                        {"down_gpu_hours", round_to(hours(m.down_gpu_s), 4)},
                        {"availability_percent", round_to(m.availability_percent, 6)},
                        {"fee", round_to(m.fee, 2)},
                        {"credit", round_to(m.credit, 2)}}},
                      {"entities", listed}});
  }
  doc["months"] = months;
  ordered cancel = ordered::array();
  for (const CancellationRight& r : rep.cancellations)
    cancel.push_back({{"name", rep.entity_names[static_cast<std::size_t>(r.entity)]},
                      {"month", month_name(rep.months[r.month].month)},
                      {"rule", r.rule},
                      {"detail", r.detail}});
  doc["cancellation_rights"] = cancel;
  doc["summary"] = {{"credit_total", round_to(rep.credit_total, 2)},
                    {"currency", c.currency},
                    {"cancellation_rights", rep.cancellations.size()}};
  return doc.dump(2) + "\n";
}

TEST(SlaJsonOut, WritesWhatNlohmannDumpsWithIndentTwo) {
  ordered tree = {{"empty_object", ordered::object()},
                  {"empty_array", ordered::array()},
                  {"text", "plain"},
                  {"escapes", "quote \" backslash \\ tab \t newline \n cr \r bell \x07 del \x7f"},
                  {"utf8", "Grüße, 東京 \xF0\x9F\x98\x80"},
                  {"neg", -42},
                  {"big", std::numeric_limits<std::uint64_t>::max()},
                  {"small", std::numeric_limits<std::int64_t>::min()},
                  {"yes", true},
                  {"nothing", nullptr}};
  const std::vector<double> doubles = {0.0,
                                       -0.0,
                                       1.0,
                                       99.5,
                                       100.0,
                                       0.1,
                                       1e-5,
                                       1e15,
                                       1e16,
                                       1e21,
                                       123456.789,
                                       2.0 / 3.0,
                                       -1e-300,
                                       5e-324,
                                       1.7976931348623157e308,
                                       99.39814814814815};
  ordered list = ordered::array();
  for (double d : doubles) list.push_back(d);
  list.push_back(ordered::array({ordered::object(), ordered::array(), 1}));
  tree["doubles"] = list;
  tree["not_finite"] = ordered::array({std::nan(""), std::numeric_limits<double>::infinity()});

  std::string out;
  JsonOut j(out);
  j.begin_object();
  j.key("empty_object");
  j.begin_object();
  j.end_object();
  j.key("empty_array");
  j.begin_array();
  j.end_array();
  j.key("text");
  j.value("plain");
  j.key("escapes");
  j.value("quote \" backslash \\ tab \t newline \n cr \r bell \x07 del \x7f");
  j.key("utf8");
  j.raw(JsonOut::quote("Grüße, 東京 \xF0\x9F\x98\x80"));
  j.key("neg");
  j.value(std::int64_t{-42});
  j.key("big");
  j.value(std::numeric_limits<std::uint64_t>::max());
  j.key("small");
  j.value(std::numeric_limits<std::int64_t>::min());
  j.key("yes");
  j.value(true);
  j.key("nothing");
  j.null();
  j.key("doubles");
  j.begin_array();
  for (double d : doubles) j.value(d);
  j.begin_array();
  j.begin_object();
  j.end_object();
  j.begin_array();
  j.end_array();
  j.value(std::int32_t{1});
  j.end_array();
  j.end_array();
  j.key("not_finite");
  j.begin_array();
  j.value(std::nan(""));
  j.value(std::numeric_limits<double>::infinity());
  j.end_array();
  j.end_object();
  EXPECT_EQ(out, tree.dump(2));
}

TEST(SlaJsonOut, QuoteThrowsOnInvalidUtf8AsNlohmannDoes) {
  EXPECT_THROW(JsonOut::quote("bad \xC3("), nlohmann::json::type_error);
}

TEST(SlaRenderJson, SameBytesAsTheTreeRendering) {
  using testing::load;
  using testing::rack_contract;
  // Node scope (every tray listed), a rack outage, exclusions, anomalies with examples that need
  // escaping, two months with a cancellation right.
  const Contract c = load(rack_contract(
      "node", R"({"min_down_nodes": 2})", "UTC",
      R"([{"kind": "maintenance", "scope": "rack", "targets": ["r1"],
           "start": "2026-04-20T00:00:00Z", "end": "2026-04-20T06:00:00Z", "reason": "firmware"}])"));
  auto events = parse_events_csv(
      "t01,2026-04-10T08:00:00Z,2026-04-12T14:00:00Z,down\n"
      "t02,2026-04-10T10:00:00Z,2026-04-10T18:00:00Z,down\n"
      "t02,2026-04-10T10:00:00Z,2026-04-10T18:00:00Z,down\n"
      "t03,2026-05-01T00:00:00Z,,down\n"
      "\"t04 \"\"quoted\"\" \t tab\",2026-04-10T10:00:00Z,2026-04-10T18:00:00Z,down\n"
      "tray-ü,2026-04-10T10:00:00Z,2026-04-10T18:00:00Z,down\n"
      "t05,yesterday,today,down\n",
      c.zone);
  ASSERT_TRUE(events.has_value());
  auto w = month_window(c.zone, {2026, 4}, {2026, 5});
  ASSERT_TRUE(w.has_value());
  const SlaReport rep = compute_sla(std::move(*events), c, *w);
  ASSERT_FALSE(rep.cancellations.empty());
  ASSERT_GT(rep.anomalies.unknown_node.count, 0u);
  InputInfo info{"csv", "/data/events \"2026\".csv", true};
  EXPECT_EQ(render_json(rep, c, *w, info), reference_render_json(rep, c, *w, info));
  // With drills listed and an as-of time inside the window.
  info.drills = {{"t01", "1a2b", "cmaxd db", 1775808000, 1775811600}, {"t02", "ff00", "x/drill.json", 1775808000, kOpenEnd}};
  info.drills_elsewhere = {{"gpu-9", "0001", "cmaxd db", 1775808000, kOpenEnd}};
  info.closed_by_drills = 1;
  auto events2 = parse_events_csv("t03,2026-05-01T00:00:00Z,,down\n", c.zone);
  ASSERT_TRUE(events2.has_value());
  const SlaReport rep2 = compute_sla(std::move(*events2), c, *w, 1778000000);
  EXPECT_EQ(render_json(rep2, c, *w, info), reference_render_json(rep2, c, *w, info));
}

}  // namespace
}  // namespace cmax::sla
