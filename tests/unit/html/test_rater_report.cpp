// What a rater met in report.html after `cmax run --plan standard` (issue 35): NCCL summary and
// scaling tables before grouped charts, legends that show what was measured, hit-rate legend
// colours that match the bars, no empty cost chart, the report stage described as done, logs linked
// only when they exist, exit codes labelled as the docs say, bench.json's warnings shown.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "html/charts.h"
#include "html/page.h"
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

// The fill of every element whose class attribute is exactly `cls`.
std::set<std::string> fills_of(std::string_view svg, std::string_view cls) {
  std::set<std::string> out;
  const std::string key = fmt::format("class=\"{}\"", cls);
  for (auto at = svg.find(key); at != std::string_view::npos; at = svg.find(key, at + 1)) {
    const auto end = svg.find('>', at);
    const auto fill = svg.find("fill=\"", at);
    if (fill == std::string_view::npos || fill > end) continue;
    out.emplace(svg.substr(fill + 6, svg.find('"', fill + 6) - fill - 6));
  }
  return out;
}

loadgen::RunView bench(std::string label, double measured, double theoretical) {
  loadgen::RunView v;
  v.label = std::move(label);
  v.overall.requests = v.overall.succeeded = 10;
  v.overall.cache_hit_rate = measured;
  v.theoretical_hit_rate = theoretical;
  return v;
}

TEST(HtmlRaterReport, HitRateLegendSwatchesHaveTheColoursOfTheirBars) {
  const auto a = bench("provider-a", 0.36, 0.8), b = bench("provider-b", 0.5, 0.7);
  const std::string svg = svg_hit_rate({&a, &b});
  EXPECT_EQ(cmax::test::xml_problem(svg), "");
  EXPECT_NE(svg.find("data-chart=\"endpoint-hit-rate\""), std::string::npos);
  for (std::string_view kind : {"measured", "theoretical"}) {
    const auto bars = fills_of(svg, fmt::format("bar {}", kind));
    const auto swatch = fills_of(svg, fmt::format("swatch {}", kind));
    EXPECT_EQ(count(svg, fmt::format("class=\"bar {}\"", kind)), 2u) << kind;
    ASSERT_EQ(swatch.size(), 1u) << kind << ": one legend swatch";
    EXPECT_EQ(bars, swatch) << kind << ": every bar has its swatch's colour";
  }
  EXPECT_NE(fills_of(svg, "bar measured"), fills_of(svg, "bar theoretical")) << "the two kinds apart";
  EXPECT_EQ(svg.find("above theoretical"), std::string::npos);
}

TEST(HtmlRaterReport, HitRateAboveTheTheoreticalIsOutlinedAndSaid) {
  const auto a = bench("trial", 0.9, 0.6);
  const std::string svg = svg_hit_rate({&a});
  EXPECT_EQ(cmax::test::xml_problem(svg), "");
  EXPECT_NE(svg.find("90.0% (above theoretical)"), std::string::npos);
  EXPECT_NE(svg.find("measured above theoretical: not possible on the prompts sent"), std::string::npos);
  EXPECT_EQ(fills_of(svg, "bar measured"), fills_of(svg, "swatch measured"));
}

// A legend as `cmax nccl` writes it (src/nccl/chart.cpp).
constexpr std::string_view kNcclChart =
    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"860\" height=\"500\">\n<g class=\"legend\">\n"
    "<rect x=\"78.0\" y=\"60.0\" width=\"190\" height=\"98\" fill=\"#ffffff\" fill-opacity=\"0.85\" "
    "stroke=\"#cccccc\"/>\n"
    "<circle cx=\"90.0\" cy=\"72.0\" r=\"3\" fill=\"#1f77b4\"/><text x=\"104.0\" y=\"76.0\">out-of-place</text>\n"
    "<circle cx=\"90.0\" cy=\"88.0\" r=\"5\" fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"1.5\"/><text "
    "x=\"104.0\" y=\"92.0\">in-place</text>\n"
    "<line x1=\"84.0\" y1=\"104.0\" x2=\"98.0\" y2=\"104.0\" stroke=\"#2ca02c\" stroke-width=\"1.5\"/><text "
    "x=\"104.0\" y=\"108.0\">fit (peak 377.1 GB/s)</text>\n"
    "<circle cx=\"90.0\" cy=\"120.0\" r=\"6\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/><text "
    "x=\"104.0\" y=\"124.0\">flagged size</text>\n"
    "<line x1=\"84.0\" y1=\"136.0\" x2=\"98.0\" y2=\"136.0\" stroke=\"#555555\" stroke-dasharray=\"6 4\"/><text "
    "x=\"104.0\" y=\"140.0\">reference peak</text>\n</g>\n</svg>\n";

TEST(HtmlRaterReport, NcclLegendShowsTheMeasuredPeakAndNamesTheFitAModel) {
  const std::string svg = nccl_measured_legend(kNcclChart, 365.84);
  EXPECT_EQ(cmax::test::xml_problem(svg), "");
  EXPECT_EQ(svg.find("peak 377.1"), std::string::npos) << "the fit's extrapolated peak is not in the legend";
  EXPECT_NE(svg.find(">fit (model curve)</text>"), std::string::npos);
  EXPECT_NE(svg.find("<text class=\"measured-peak\" x=\"104.0\" y=\"156.0\" font-weight=\"bold\">measured peak "
                     "365.8 GB/s</text>\n</g>"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("width=\"215\" height=\"114\""), std::string::npos) << "the box holds the new line";
  // A chart without that legend (another writer's) is left as it is.
  EXPECT_EQ(nccl_measured_legend("<svg><g/></svg>", 1), "<svg><g/></svg>");
}

TEST(HtmlRaterReport, StageExitCodesAreLabelledAsTheDocsSay) {
  EXPECT_EQ(stage_exit_meaning("audit", 3), "usage or environment");
  EXPECT_EQ(stage_exit_meaning("endpoint", 3), "usage or environment");
  EXPECT_EQ(stage_exit_meaning("audit", 0), "clean");
  EXPECT_EQ(stage_exit_meaning("audit", 1), "findings: a check failed");
  EXPECT_EQ(stage_exit_meaning("audit", 2), "findings: a security check failed");
  EXPECT_EQ(stage_exit_meaning("nccl", 1), "findings: an anomaly or poor scaling");
  EXPECT_EQ(stage_exit_meaning("nccl", 2), "a log or sweep step failed, or the sweep was interrupted");
  EXPECT_EQ(stage_exit_meaning("endpoint", 2), "interrupted: partial results");
  EXPECT_EQ(stage_exit_meaning("nccl", 130), "interrupted");
  EXPECT_EQ(stage_exit_meaning("scan", 137), "killed by signal 9");
  EXPECT_EQ(stage_exit_meaning("drill", -1), "did not exit");
}

TEST(HtmlRaterReport, AFailedStagesReasonIsNeverTheReportPath) {
  const std::string log =
      "# /usr/bin/cmax run --stage audit --out /r\n"
      "cmax run: no node was evaluated: every node not_scheduled (n1, n2)\n"
      "\n"
      "Run directory: /r\n"
      "Report: /r/report.html (3 charts; re-render: cmax report /r)\n"
      "# failed after 2.0 s, exit 3\n";
  EXPECT_EQ(stage_failure_reason("exit 3 (last line: Report: /r/report.html (3 charts; re-render: cmax report /r))", log),
            "exit 3 (log: cmax run: no node was evaluated: every node not_scheduled (n1, n2))");
  // Without a log the report line is dropped all the same.
  EXPECT_EQ(stage_failure_reason("exit 3 (last line: Report: /r/report.html (3 charts))", ""), "exit 3");
  EXPECT_EQ(stage_failure_reason("stopped at its budget of 60 s (last line: Report: /r/report.html); raise the "
                                 "stage's budget_s or --budget",
                                 log),
            "stopped at its budget of 60 s (log: cmax run: no node was evaluated: every node not_scheduled (n1, "
            "n2)); raise the stage's budget_s or --budget");
  // A last line that is a reason stays.
  EXPECT_EQ(stage_failure_reason("exit 3 (last line: cmax nccl: no nccl-tests found)", log),
            "exit 3 (last line: cmax nccl: no nccl-tests found)");
  EXPECT_EQ(stage_failure_reason("start the nccl stage: no such file", log), "start the nccl stage: no such file");
}

NcclView nccl_sweep() {
  auto v = parse_nccl_view(R"({"schema": "cmax.nccl/1",
    "sweep": {"steps": [{"step": "all_reduce-4n-default", "test": "all_reduce", "nodes": 4, "variant": "default",
                         "exit_code": 3, "error": "exit 3: srun: error: Unable to allocate resources"}]},
    "runs": [
      {"file": "a.log", "step": "all_reduce-1n-default", "variant": "default", "collective": "all_reduce",
       "ranks": 2, "nodes": 1, "peak_busbw_gbps": 10.5, "fit": {"ok": true, "peak_gbps": 14.0}, "verdict": "pass",
       "anomalies": []},
      {"file": "b.log", "step": "all_reduce-2n-default", "variant": "default", "collective": "all_reduce",
       "ranks": 4, "nodes": 2, "peak_busbw_gbps": 6.25, "verdict": "warn",
       "anomalies": [{"kind": "dip", "detail": "2 MiB: dip"}, {"kind": "cliff", "detail": "64 MiB: cliff"}]},
      {"file": "c.log", "step": "all_gather-1n-default", "variant": "default", "collective": "all_gather",
       "ranks": 2, "nodes": 1, "peak_busbw_gbps": 8, "verdict": "pass", "anomalies": []},
      {"file": "d.log", "step": "all_gather-2n-default", "variant": "default", "collective": "all_gather",
       "ranks": 4, "nodes": 2, "peak_busbw_gbps": 7.5, "verdict": "pass", "anomalies": []}],
    "scaling": [{"group": "all_reduce cpu (default) in /r/nccl", "kind": "poor_scaling", "nodes": 2,
                 "measured_gbps": 6.25, "expected_gbps": 9.8, "detail": "2 nodes: 6.25 GB/s, 36% below"}]})");
  EXPECT_TRUE(v) << v.error().message;
  return v ? *v : NcclView{};
}

TEST(HtmlRaterReport, NcclScalingTableIsBusbwByNodeCountPerCollective) {
  const auto t = nccl_scaling_table(nccl_sweep());
  EXPECT_EQ(t.node_counts, (std::vector<int>{1, 2}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].collective, "all_reduce");
  EXPECT_EQ(t.rows[0].variant, "default");
  EXPECT_DOUBLE_EQ(*t.rows[0].cells[0].peak_busbw_gbps, 10.5);
  EXPECT_FALSE(t.rows[0].cells[0].expected_gbps);
  EXPECT_DOUBLE_EQ(*t.rows[0].cells[1].peak_busbw_gbps, 6.25);
  EXPECT_DOUBLE_EQ(*t.rows[0].cells[1].expected_gbps, 9.8) << "flagged by nccl.json's scaling";
  EXPECT_EQ(t.rows[1].collective, "all_gather");
  EXPECT_FALSE(t.rows[1].cells[1].expected_gbps);
}

RunReport bare_run() {
  RunReport r;
  r.dir = "/r";
  r.label = r.card.label = "trial";
  r.card.tier = "Bronze";
  r.card.categories.resize(audit::kCategoryCount);
  for (int i = 0; i < audit::kCategoryCount; ++i) r.card.categories[i].category = static_cast<audit::Category>(i);
  return r;
}

TEST(HtmlRaterReport, NcclSummaryAndScalingTablesComeBeforeChartsGroupedByCollective) {
  RunReport r = bare_run();
  r.nccl = nccl_sweep();
  for (auto& c : r.nccl->runs) c.svg = std::string(kNcclChart);
  const auto page = render_page({r}, rubric(), {"t", "v"});
  const std::string& h = page.html;
  const auto summary = h.find("<table class=\"nccl-summary\">");
  const auto scaling = h.find("<table class=\"nccl-scaling\">");
  const auto first_chart = h.find("data-chart=\"nccl\"");
  ASSERT_NE(summary, std::string::npos);
  ASSERT_NE(scaling, std::string::npos);
  ASSERT_NE(first_chart, std::string::npos);
  EXPECT_LT(summary, scaling);
  EXPECT_LT(scaling, first_chart);
  EXPECT_NE(h.find("<tr><td><a href=\"#run-0-nccl-chart-1\">all_reduce-2n-default</a></td><td>all_reduce</td><td "
                   "class=\"num\">2</td><td class=\"num\">4</td><td>default</td><td class=\"num\">6.25</td><td "
                   "class=\"num\">-</td><td class=\"num o-warn\">2</td><td class=\"o-warn\">warn</td></tr>"),
            std::string::npos);
  EXPECT_NE(h.find("<td class=\"num o-warn\" title=\"2 nodes: 6.25 GB/s, 36% below\">6.25 (expected 9.8)</td>"),
            std::string::npos);
  EXPECT_NE(h.find("step all_reduce-4n-default (all_reduce, 4 nodes): no result: exit 3: srun: error"),
            std::string::npos);
  // Charts closed, one group per collective.
  EXPECT_EQ(count(h, "<details class=\"nccl-charts\">"), 2u);
  EXPECT_NE(h.find("<summary>all_reduce: 2 charts (1, 2 nodes) · 2 anomalies</summary>"), std::string::npos);
  EXPECT_NE(h.find("<summary>all_gather: 2 charts (1, 2 nodes)</summary>"), std::string::npos);
  EXPECT_EQ(count(h, "data-chart=\"nccl\""), 4u);
  EXPECT_NE(h.find("id=\"run-0-nccl-chart-1\""), std::string::npos);
  // Captions and legends say what was measured; a fit is named a fit.
  EXPECT_NE(h.find("measured peak 10.5 GB/s · fitted model&apos;s peak 14 GB/s (a fit, not measured)"),
            std::string::npos);
  EXPECT_EQ(h.find("(peak 377.1 GB/s)"), std::string::npos);
  EXPECT_EQ(count(h, "class=\"measured-peak\""), 4u);
}

TEST(HtmlRaterReport, NoPricesIsOneLineNotAnEmptyChart) {
  RunReport r = bare_run();
  r.bench = bench("trial", 0.3, 0.5);
  auto page = render_page({r}, rubric(), {"t", "v"});
  EXPECT_EQ(page.html.find("data-chart=\"endpoint-cost\""), std::string::npos);
  EXPECT_EQ(std::count(page.charts.begin(), page.charts.end(), "endpoint-cost"), 0);
  EXPECT_NE(page.html.find("no prices given: pass --prices FILE to cmax endpoint bench"), std::string::npos);
  r.bench->has_bill = true;
  r.bench->bill.usd_per_mtok = 0.2;
  r.bench->bill.ratio_to_reference = 2;
  page = render_page({r}, rubric(), {"t", "v"});
  EXPECT_NE(page.html.find("data-chart=\"endpoint-cost\""), std::string::npos);
  EXPECT_EQ(page.html.find("no prices given"), std::string::npos);
}

TEST(HtmlRaterReport, BenchWarningsAreShownAtTheTopOfTheEndpointSection) {
  RunReport r = bare_run();
  r.bench = bench("trial", 0.9, 0.6);
  r.bench_warnings = {"measured hit rate 90.0% is above the achievable 60.0% <check the cache field>"};
  const auto page = render_page({r}, rubric(), {"t", "v"});
  const auto section = page.html.find("id=\"endpoints\"");
  const auto alert = page.html.find(
      "<p class=\"alert\"><strong>warning</strong> measured hit rate 90.0% is above the achievable 60.0% &lt;check "
      "the cache field&gt;</p>");
  ASSERT_NE(alert, std::string::npos);
  EXPECT_LT(section, alert);
  EXPECT_LT(alert, page.html.find("<table class=\"endpoints\">")) << "before the numbers";
}

TEST(HtmlViews, BenchWarningsAreReadDefensively) {
  EXPECT_TRUE(bench_warnings(nlohmann::json::parse(R"({"schema": "cmax.endpoint.bench/1"})")).empty());
  EXPECT_TRUE(bench_warnings(nlohmann::json::parse(R"({"warnings": "not an array"})")).empty());
  EXPECT_EQ(bench_warnings(nlohmann::json::parse(R"({"warnings": ["a", 3, "", "b"]})")),
            (std::vector<std::string>{"a", "b"}));
}

CampaignView campaign() {
  CampaignView c;
  c.plan = "standard";
  auto stage = [](std::string id, std::string status, int exit_code, std::string error, bool log) {
    StageView s;
    s.id = s.kind = std::move(id);
    s.status = std::move(status);
    s.exit_code = exit_code;
    s.error = std::move(error);
    s.run = true;
    s.targets = "this run directory";
    s.log = "logs/" + s.id + ".log";
    s.log_exists = log;
    return s;
  };
  c.stages = {stage("audit", "failed", 3, "exit 3 (log: cmax run: no node was evaluated)", true),
              stage("nccl", "done", 1, "", true), stage("score", "done", 0, "", false),
              stage("report", "running", -1, "", false)};
  StageView drill;
  drill.id = drill.kind = "drill";
  drill.status = "skipped";
  drill.reason = "disruptive: not without --allow-disruptive";
  drill.todo = "cmax run --plan full --allow-disruptive";
  c.stages.insert(c.stages.begin() + 2, drill);
  return c;
}

TEST(HtmlRaterReport, StageTableMatchesTheRun) {
  RunReport r = bare_run();
  r.campaign = campaign();
  r.href_base = "../r/";
  const auto page = render_page({r}, rubric(), {"t", "v"});
  const std::string& h = page.html;
  EXPECT_EQ(h.find("report: running"), std::string::npos);
  EXPECT_EQ(h.find(">running<"), std::string::npos);
  EXPECT_NE(h.find("<h4>report: done</h4>"), std::string::npos);
  EXPECT_NE(h.find("<td class=\"o-pass\">done</td><td></td><td class=\"num\"></td><td>this page</td><td></td>"),
            std::string::npos);
  EXPECT_NE(h.find("<td class=\"o-fail\">failed</td><td>3 (usage or environment)</td><td class=\"num\"></td>"
                   "<td>exit 3 (log: cmax run: no node was evaluated)</td><td><a href=\"../r/logs/audit.log\">"
                   "logs/audit.log</a></td>"),
            std::string::npos);
  EXPECT_NE(h.find("<td>1 (findings: an anomaly or poor scaling)</td>"), std::string::npos);
  EXPECT_NE(h.find("<td>disruptive: not without --allow-disruptive · to run it: cmax run --plan full "
                   "--allow-disruptive</td>"),
            std::string::npos);
  EXPECT_EQ(h.find("(findings)"), std::string::npos);
  // Logs that were never written are neither linked nor named.
  EXPECT_EQ(h.find("logs/score.log"), std::string::npos);
  EXPECT_EQ(h.find("logs/report.log"), std::string::npos);
  EXPECT_EQ(count(h, "href=\"../r/logs/"), 4u) << "audit and nccl, in the table and in their sections";
}

}  // namespace
}  // namespace cmax::html
