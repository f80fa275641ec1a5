#include <gtest/gtest.h>


#include "html/charts.h"
#include "html/page.h"
#include "html_test_util.h"
#include "support/xml_check.h"

namespace cmax::html {
namespace {

std::size_t count(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string_view::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

score::Rubric rubric() {
  auto r = score::load_rubric(std::nullopt);
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : score::Rubric{};
}

audit::Finding finding(std::string id, audit::Category c, audit::Outcome o) {
  audit::Finding f;
  f.title = "title of " + id;
  f.check_id = std::move(id);
  f.category = c;
  f.outcome = o;
  return f;
}

TEST(HtmlCharts, AvailabilityCalendarColoursEveryCellByItsMonth) {
  auto v = parse_sla_view(test::kSlaDoc);
  ASSERT_TRUE(v);
  std::string svg = svg_availability(*v);
  EXPECT_EQ(cmax::test::xml_problem(svg), "");
  // Rows: total + r03 + r01 + r02; 3 months each.
  EXPECT_EQ(count(svg, "class=\"cell "), 12u);
  EXPECT_EQ(count(svg, "class=\"cell credited\""), 2u);  // r01 in April, and so the total
  EXPECT_EQ(count(svg, "class=\"cell below\""), 2u);     // the total and r03 in June
  EXPECT_EQ(count(svg, "class=\"cell met\""), 2u);       // the total in May, r02 in April
  EXPECT_EQ(count(svg, "class=\"cell clean\""), 6u);
  EXPECT_NE(svg.find("data-chart=\"availability\""), std::string::npos);
  EXPECT_NE(svg.find(">Apr<"), std::string::npos);
  EXPECT_NE(svg.find(">2026<"), std::string::npos);
}

TEST(HtmlCharts, DrillTimelineDrawsReachedStagesNeverAndFailures) {
  auto v = parse_drill_view(test::kDrillDoc);
  ASSERT_TRUE(v);
  std::string svg = svg_drill_timeline(*v);
  EXPECT_EQ(cmax::test::xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<circle class=\"stage "), 4u) << "n1's three stages and n2's detected";
  EXPECT_EQ(count(svg, "class=\"uncertainty\""), 4u);
  EXPECT_EQ(count(svg, "class=\"never\""), 1u);
  EXPECT_EQ(count(svg, "class=\"threshold\""), 2u) << "n2's slow detection and its never drain";
  EXPECT_NE(svg.find("injection failed: write /dev/kmsg: permission denied"), std::string::npos);
  EXPECT_NE(svg.find("n3 joined reservation drill"), std::string::npos);
}

TEST(HtmlCharts, ScorecardDrawsEvaluatedCategoriesAndNamesTheRest) {
  score::ScoreCard card;
  card.label = "run<1>";
  card.categories.resize(audit::kCategoryCount);
  for (int i = 0; i < audit::kCategoryCount; ++i) card.categories[i].category = static_cast<audit::Category>(i);
  card.categories[0].score = 80;
  card.categories[0].confidence = 1;
  card.categories[3].score = 20;
  card.categories[3].confidence = 0.5;
  std::string svg = svg_scorecard({&card}, rubric());
  EXPECT_EQ(cmax::test::xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 2u);
  EXPECT_EQ(count(svg, ">not evaluated<"), 8u);
  EXPECT_NE(svg.find("run&lt;1&gt;: Storage 20.0 (confidence 50%)"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"tier\""), 4u) << "Platinum, Gold, Silver, Bronze; Underperform starts at 0";
}

TEST(HtmlCharts, FindingsStackCountsEveryOutcome) {
  std::vector<audit::Finding> f{finding("a", audit::Category::security, audit::Outcome::fail),
                                finding("b", audit::Category::security, audit::Outcome::fail),
                                finding("c", audit::Category::security, audit::Outcome::pass),
                                finding("d", audit::Category::storage, audit::Outcome::unverified)};
  std::string svg = svg_findings(f);
  EXPECT_EQ(cmax::test::xml_problem(svg), "");
  EXPECT_NE(svg.find("<title>Security: 2 fail</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>Security: 1 pass</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>Storage: 1 unverified</title>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"seg "), 3u);
}

TEST(HtmlCharts, TagChartMarksTheRootOnly) {
  EXPECT_EQ(tag_chart("<svg a=\"1\"><g/></svg>", "nccl"), "<svg data-chart=\"nccl\" a=\"1\"><g/></svg>");
}

RunReport sample_run() {
  RunReport r;
  r.dir = "/tmp/run1";
  r.label = "run1";
  r.host = "h1";
  r.findings = {finding("security.docker.floor", audit::Category::security, audit::Outcome::fail),
                finding("storage.rwx", audit::Category::storage, audit::Outcome::unverified),
                finding("lifecycle.kernel", audit::Category::lifecycle, audit::Outcome::pass)};
  r.findings[0].observed = "<script>alert('x')</script>";
  r.findings[0].remediation = "upgrade Docker & restart";
  r.findings[0].links = {"https://example.com/advisory?a=1&b=2"};
  r.card.label = "run1";
  r.card.tier = "Bronze";
  r.card.total = 55;
  r.card.categories.resize(audit::kCategoryCount);
  for (int i = 0; i < audit::kCategoryCount; ++i) r.card.categories[i].category = static_cast<audit::Category>(i);
  r.sla = *parse_sla_view(test::kSlaDoc);
  r.drill = *parse_drill_view(test::kDrillDoc);
  r.scan = *parse_scan_view(test::kScanDoc);
  r.cluster = *parse_cluster_view(test::kClusterDoc);
  NcclView n;
  NcclChart c;
  c.file = "a.log";
  c.svg = "<svg xmlns=\"http://www.w3.org/2000/svg\"><g/></svg>";
  n.runs.push_back(c);
  c.file = "b.log";
  c.svg.clear();
  c.svg_error = "open b-1.svg: cannot read";
  n.runs.push_back(c);
  r.nccl = n;
  r.warnings = {"scan.json: not JSON"};
  return r;
}

TEST(HtmlPage, OneRunHasEverySectionAndChartAndEscapesEverything) {
  auto page = render_page({sample_run()}, rubric(), {"2026-12-03T19:00:00Z", "0.1.0"});
  const std::string& h = page.html;
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(h.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  EXPECT_NE(h.find("name=\"viewport\""), std::string::npos);
  EXPECT_EQ(h.find("<script"), std::string::npos) << "a finding's text must not become markup";
  EXPECT_NE(h.find("&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(h.find("upgrade Docker &amp; restart"), std::string::npos);
  EXPECT_NE(h.find("href=\"https://example.com/advisory?a=1&amp;b=2\""), std::string::npos);
  EXPECT_EQ(page.charts, (std::vector<std::string>{"scorecard", "findings", "nccl", "drill", "availability"}));
  // Every chart the page lists is in it, tagged, and no other.
  EXPECT_EQ(count(h, "data-chart=\""), page.charts.size());
  for (const char* id : {"run-0-score", "run-0-findings", "run-0-nodes", "run-0-scan", "run-0-nccl", "run-0-drill",
                         "run-0-sla"})
    EXPECT_NE(h.find(fmt::format("id=\"{}\"", id)), std::string::npos) << id;
  EXPECT_NE(h.find("b.log: chart missing: open b-1.svg: cannot read"), std::string::npos);
  EXPECT_NE(h.find("scan.json: not JSON"), std::string::npos);
  EXPECT_NE(h.find("r03 2026-06: availability 93.1000% is below 95%"), std::string::npos);
  EXPECT_NE(h.find("Task launch failed on node n3"), std::string::npos);
  // Fail findings are articles with their evidence; the unverified ones a table.
  EXPECT_EQ(count(h, "<article class=\"finding fail\">"), 1u);
  EXPECT_NE(h.find("<details class=\"o-unverified\" open><summary>1 unverified</summary>"), std::string::npos);
  // No external references anywhere in markup that loads (links to follow are fine).
  EXPECT_EQ(h.find("src="), std::string::npos);
  EXPECT_EQ(h.find("url("), std::string::npos);
  EXPECT_EQ(h.find("@import"), std::string::npos);
}

TEST(HtmlPage, ACheckOnManyNodesIsShownOnceWithItsNodesGroupedByAnswer) {
  RunReport r = sample_run();
  r.findings.clear();
  for (int i = 0; i < 20; ++i) {
    auto f = finding(fmt::format("security.docker.floor@n{}", i), audit::Category::security,
                     i < 15 ? audit::Outcome::fail : audit::Outcome::pass);
    f.observed = i < 15 ? "28.2.2" : "29.8.2";
    f.remediation = "upgrade Docker";
    r.findings.push_back(f);
  }
  r.findings.push_back(finding("lifecycle.kernel@n1", audit::Category::lifecycle, audit::Outcome::pass));
  r.findings.push_back(finding("lifecycle.kernel@n2", audit::Category::lifecycle, audit::Outcome::pass));
  auto page = render_page({r}, rubric(), {"t", "v"});
  const std::string& h = page.html;
  EXPECT_EQ(count(h, "<article class=\"finding fail\">"), 1u);
  EXPECT_EQ(count(h, "upgrade Docker"), 1u) << "the remediation once, not once per node";
  EXPECT_NE(h.find("<code>security.docker.floor</code>"), std::string::npos);
  EXPECT_NE(h.find("fail</span> on 15 nodes, observed 28.2.2: n0, n1, n2, n3, n4, n5, n6, n7, n8, n9, n10, n11 and 3 more"),
            std::string::npos);
  EXPECT_NE(h.find("pass</span> on 5 nodes, observed 29.8.2: n15, n16, n17, n18, n19"), std::string::npos);
  EXPECT_NE(h.find("<code>lifecycle.kernel</code> <span class=\"note\">(2 nodes)</span>"), std::string::npos);
  EXPECT_NE(h.find("<summary>1 pass</summary>"), std::string::npos);
}

TEST(HtmlPage, AnIsolationProbeIsGroupedByAddressWithItsSummary) {
  RunReport r = sample_run();
  r.findings.clear();
  auto summary = finding("isolation.grafana.anonymous", audit::Category::security, audit::Outcome::fail);
  summary.observed = "254 addresses probed: 2 open, 252 closed";
  r.findings.push_back(summary);
  auto open = finding("isolation.grafana.anonymous@10.0.0.5:3000", audit::Category::security, audit::Outcome::fail);
  open.observed = "dashboards listable without a login: 2 entries";
  r.findings.push_back(open);
  auto login = finding("isolation.grafana.anonymous@10.0.0.6:3000", audit::Category::security, audit::Outcome::pass);
  login.observed = "login required (HTTP 401)";
  r.findings.push_back(login);
  auto page = render_page({r}, rubric(), {"t", "v"});
  const std::string& h = page.html;
  EXPECT_NE(h.find("<dt>addresses</dt>"), std::string::npos);
  EXPECT_NE(h.find("fail</span> in all: 254 addresses probed: 2 open, 252 closed"), std::string::npos);
  EXPECT_NE(h.find("fail</span> on 1 address, observed dashboards listable without a login: 2 entries: 10.0.0.5:3000"),
            std::string::npos);
  EXPECT_NE(h.find("pass</span> on 1 address, observed login required (HTTP 401): 10.0.0.6:3000"), std::string::npos);
  EXPECT_EQ(h.find("<dt>nodes</dt>"), std::string::npos) << "addresses, not nodes";
  EXPECT_EQ(h.find(" on 1 node"), std::string::npos);
}

TEST(HtmlPage, SeveralRunsAreRankedSideBySide) {
  auto a = sample_run();
  auto b = sample_run();
  b.label = b.card.label = "run2";
  b.card.total = 70;
  b.card.tier = "Silver";
  b.sla.reset();
  b.drill.reset();
  b.nccl.reset();
  auto page = render_page({a, b}, rubric(), {"t", "v"});
  EXPECT_EQ(page.sections.front(), "compare");
  auto run2 = page.html.find("<a href=\"#run-1\">run2</a>");
  auto run1 = page.html.find("<a href=\"#run-0\">run1</a>");
  ASSERT_NE(run2, std::string::npos);
  ASSERT_NE(run1, std::string::npos);
  // The ranking table lists run2 (70) before run1 (55); the nav lists them in the order given.
  auto table = page.html.find("<table><tr><th>rank</th>");
  ASSERT_NE(table, std::string::npos);
  EXPECT_LT(page.html.find("run2", table), page.html.find("run1", table));
  EXPECT_EQ(std::count(page.charts.begin(), page.charts.end(), "scorecard"), 3);
}


TEST(HtmlPage, SlaCountsRacksWithDowntimeApartFromExclusionsAndListsDrills) {
  RunReport r = sample_run();
  auto v = parse_sla_view(R"({"schema": "cmax.sla/1",
    "contract": {"name": "trial", "scope": "rack", "availability_target_percent": 99.5, "currency": "USD"},
    "drills": [{"node": "n1", "drill": "1a2b", "source": "cmaxd db", "start": "2026-12-05T05:24:38Z",
                "end": "2026-12-05T05:24:40Z", "excluded": true}],
    "months": [{"month": "2026-03", "totals": {"availability_percent": 99.9, "down_gpu_hours": 6},
      "entities": [{"name": "r01", "availability_percent": 99.9, "down_gpu_hours": 4, "excluded_gpu_hours": 2},
                   {"name": "r02", "availability_percent": 99.95, "down_gpu_hours": 2, "excluded_gpu_hours": 0},
                   {"name": "r03", "availability_percent": 100, "down_gpu_hours": 0, "excluded_gpu_hours": 288},
                   {"name": "r04", "availability_percent": 100, "down_gpu_hours": 0, "excluded_gpu_hours": 288}]}]})");
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->entities_with_downtime, 2u);
  EXPECT_EQ(v->entities_excluded_only, 2u);
  r.sla = *v;
  const auto page = render_page({r}, rubric(), {"t", "v"});
  EXPECT_NE(page.html.find("2 racks had downtime (2 more only had excluded time"), std::string::npos);
  EXPECT_NE(page.html.find("drill 1a2b on n1: 2026-12-05T05:24:38Z .. 2026-12-05T05:24:40Z"), std::string::npos);
  // The calendar's legend lies inside the chart: it sets the width when the months are few.
  const std::string svg = svg_availability(*v);
  EXPECT_EQ(cmax::test::xml_problem(svg), "");
  const auto width = std::stod(svg.substr(svg.find("width=\"") + 7));
  const auto target = svg.find(">target 99.5%<");
  ASSERT_NE(target, std::string::npos);
  const auto x_at = svg.rfind("x=\"", target);
  const double target_x = std::stod(svg.substr(x_at + 3));
  EXPECT_LE(target_x + 6.2 * 12, width) << "the legend's last word ends inside the chart";
}

TEST(HtmlPage, DrillShowsOnlyTheStagesItWaitedForWithTheirWindowAndTheDetector) {
  RunReport r = sample_run();
  auto v = parse_drill_view(R"({"schema": "cmax.drill/1", "drill_id": "1a2b", "scenario": "xid79",
    "nodes": [{"node": "n1", "detector": {"by": "cmaxd", "owner": "rater"}, "stages": [
      {"stage": "detected", "reached": true, "at_ms": 45.0, "lower_ms": 20.5, "verdict": "ok", "awaited": true},
      {"stage": "returned", "reached": false, "verdict": "pending", "awaited": false}]}]})");
  ASSERT_TRUE(v) << v.error().message;
  r.drill = *v;
  const auto page = render_page({r}, rubric(), {"t", "v"});
  EXPECT_EQ(page.html.find("<td>returned</td>"), std::string::npos) << "not awaited: not shown as pending";
  EXPECT_NE(page.html.find("<td class=\"num\">45.0 ms</td><td class=\"num\">20.5 ms</td>"), std::string::npos);
  EXPECT_NE(page.html.find("detected by cmaxd, which the rater started"), std::string::npos);
}

TEST(HtmlPage, EndpointsAsATableAndScoresSideBySideWithHeaders) {
  RunReport a = sample_run(), b = sample_run();
  b.label = b.card.label = "run2";
  loadgen::RunView v;
  v.label = "provider-a";
  v.overall.requests = 10;
  v.overall.succeeded = 10;
  a.bench = v;
  v.label = "provider-b";
  b.bench = v;
  const auto page = render_page({a, b}, rubric(), {"t", "v"});
  EXPECT_EQ(page.html.find("<pre class=\"wide\">"), std::string::npos);
  EXPECT_NE(page.html.find("<table class=\"endpoints\"><tr><th>run</th><th class=\"num\">requests</th>"),
            std::string::npos);
  EXPECT_EQ(count(page.html, "<td>provider-"), 2u);
  EXPECT_NE(page.html.find("<table class=\"by-category\"><tr><th>category</th><th class=\"num\">run1</th><th "
                           "class=\"num\">run2</th></tr>"),
            std::string::npos);
  const auto at = page.html.find("<table class=\"endpoints\">");
  const auto table = page.html.substr(at, page.html.find("</table>", at) + 8 - at);
  EXPECT_EQ(cmax::test::xml_problem(table), "") << table;
}

}  // namespace
}  // namespace cmax::html
