#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/compare.h"
#include "support/temp_host.h"
#include "support/xml_check.h"

namespace cmax::loadgen {
namespace {

const std::filesystem::path kGolden =
    std::filesystem::path(CMAX_SOURCE_DIR) / "tests/golden/endpoint_bench";

using cmax::test::xml_problem;

std::size_t count(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string_view::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// Numbers a chart must never print: NaN and infinities as any formatter spells them.
bool has_non_finite(std::string_view svg) {
  for (std::string_view bad : {"nan", "NaN", "inf", "Inf"})
    if (svg.find(bad) != std::string_view::npos) return true;
  return false;
}

LatencyStats lat(double p50, double p99) {
  LatencyStats l;
  l.count = 100, l.mean_ms = p50, l.p50_ms = p50, l.p90_ms = p99, l.p95_ms = p99, l.p99_ms = p99,
  l.max_ms = p99;
  return l;
}

Summary summary(double hit, double ttft50, double ttft99) {
  Summary s;
  s.requests = 100, s.succeeded = 99, s.failed = 1, s.duration_s = 10;
  s.prompt_tokens = 100'000, s.cached_tokens = static_cast<std::uint64_t>(hit * 100'000),
  s.completion_tokens = 6'400;
  s.requests_with_usage = 99, s.cache_hit_rate = hit, s.output_tokens_per_s = 640;
  s.ttft = lat(ttft50, ttft99), s.tpot = lat(8.8, 12);
  return s;
}

RunView run(std::string label, double hit, double theo, bool with_levels, bool with_bill) {
  RunView r;
  r.label = std::move(label);
  r.path = "runs/" + r.label;
  r.model = "m";
  r.overall = summary(hit, 60, 180);
  r.theoretical_hit_rate = theo;
  if (with_levels)
    for (int c : {1, 2, 4, 8}) r.levels.emplace_back(c, summary(hit, 40 + 10 * c, 60 + 30 * c));
  if (with_bill) {
    r.has_bill = true;
    r.bill.measured_hit_rate = hit;
    r.bill.reference_hit_rate = 0.99;
    r.bill.run_usd = 0.03;
    r.bill.run_usd_at_reference = 0.01;
    r.bill.ratio_to_reference = 3;
    r.bill.usd_per_mtok = 0.3;
  }
  return r;
}

std::vector<std::string> all_svgs(const std::vector<RunView>& runs) {
  return {svg_latency_vs_concurrency(runs), svg_hit_rate(runs), svg_cost(runs)};
}

TEST(ReadBench, DirectoryWithSweep) {
  auto r = read_bench((kGolden / "sweep").string());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->label, "local");
  EXPECT_EQ(r->path, (kGolden / "sweep").string());
  EXPECT_EQ(r->model, "cmax-sim");
  EXPECT_EQ(r->endpoint, "http://127.0.0.1:8000/v1");
  EXPECT_EQ(r->overall.requests, 300u);
  EXPECT_NEAR(r->overall.cache_hit_rate, 0.36, 1e-12);
  ASSERT_EQ(r->levels.size(), 3u);
  EXPECT_EQ(r->levels[0].first, 1);  // sorted ascending; the file has 4, 1, 2
  EXPECT_EQ(r->levels[1].first, 2);
  EXPECT_EQ(r->levels[2].first, 4);
  EXPECT_DOUBLE_EQ(r->levels[2].second.ttft.p99_ms, 190.0);
  EXPECT_DOUBLE_EQ(r->theoretical_hit_rate, 0.36);
  EXPECT_FALSE(r->has_bill);
  EXPECT_FALSE(r->interrupted);
}

TEST(ReadBench, FileWithBillLabelledByDirectory) {
  auto r = read_bench((kGolden / "billed" / "bench.json").string());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->label, "billed");  // provider is empty
  EXPECT_TRUE(r->levels.empty());
  EXPECT_EQ(r->theoretical_hit_rate, -1);
  ASSERT_TRUE(r->has_bill);
  EXPECT_DOUBLE_EQ(r->bill.run_usd, 0.13315);
  EXPECT_DOUBLE_EQ(r->bill.reference_hit_rate, 0.99);
  EXPECT_TRUE(r->interrupted);
  // A trailing slash names the same directory.
  auto slash = read_bench((kGolden / "billed").string() + "/");
  ASSERT_TRUE(slash) << slash.error().message;
  EXPECT_EQ(slash->label, "billed");
}

TEST(ReadBench, ErrorsSayWhatIsWrong) {
  auto missing = read_bench((kGolden / "no_such_run").string());
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no_such_run"), std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().message.find("cmax endpoint bench"), std::string::npos)
      << missing.error().message;

  test::TempHost empty;
  auto no_file = read_bench(empty.dir().string());
  ASSERT_FALSE(no_file);
  EXPECT_NE(no_file.error().message.find("no bench.json"), std::string::npos)
      << no_file.error().message;

  auto schema = read_bench((kGolden / "wrong_schema").string());
  ASSERT_FALSE(schema);
  EXPECT_NE(schema.error().message.find("cmax.endpoint.serve/1"), std::string::npos)
      << schema.error().message;

  auto not_json = read_bench((kGolden / "not_json").string());
  ASSERT_FALSE(not_json);
  EXPECT_NE(not_json.error().message.find("not JSON"), std::string::npos)
      << not_json.error().message;
  EXPECT_NE(not_json.error().message.find("bench.json"), std::string::npos)
      << not_json.error().message;
}

TEST(CompareTable, RowsDashesAndLegend) {
  std::vector<RunView> runs = {run("alpha", 0.36, 0.4, true, true),
                               run("beta", -1, -1, false, false)};
  runs[1].overall.ttft = LatencyStats{};
  runs[1].interrupted = true;
  std::string t = compare_table(runs);
  auto lines = std::vector<std::string>();
  for (std::size_t at = 0, nl; (nl = t.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(t.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 4u) << t;  // header, two rows, legend
  EXPECT_EQ(lines[0].rfind("run", 0), 0u) << t;
  EXPECT_NE(lines[1].find("36.0%"), std::string::npos) << t;
  EXPECT_NE(lines[1].find("40.0%"), std::string::npos) << t;
  EXPECT_NE(lines[1].find("99.0"), std::string::npos) << t;    // ok %
  EXPECT_NE(lines[1].find("0.3000"), std::string::npos) << t;  // $/Mtok
  EXPECT_NE(lines[1].find("0.1000"), std::string::npos) << t;  // at reference: 0.3 x 0.01 / 0.03
  EXPECT_NE(lines[1].find("3.00x"), std::string::npos) << t;
  EXPECT_EQ(lines[2].rfind("beta *", 0), 0u) << t;
  EXPECT_EQ(lines[2].find('%'), std::string::npos) << t;  // no hit rate, no theoretical
  EXPECT_NE(lines[2].find(" - "), std::string::npos) << t;
  // Fixed width: every column ends in the same place on the header and the rows.
  EXPECT_EQ(lines[0].size(), lines[1].size()) << t;
  EXPECT_NE(lines[3].find("99.0%"), std::string::npos) << t;  // the reference hit rate
  EXPECT_NE(lines[3].find("interrupted"), std::string::npos) << t;

  std::string none = compare_table({});
  EXPECT_NE(none.find("(no runs)"), std::string::npos) << none;
}

TEST(CompareJson, FollowsTheSchema) {
  auto sweep = read_bench((kGolden / "sweep").string());
  auto billed = read_bench((kGolden / "billed").string());
  ASSERT_TRUE(sweep && billed);
  nlohmann::json j = compare_json({*sweep, *billed});
  EXPECT_EQ(j["schema"], "cmax.endpoint.compare/1");
  ASSERT_EQ(j["runs"].size(), 2u);
  const auto& a = j["runs"][0];
  EXPECT_EQ(a["label"], "local");
  EXPECT_EQ(a["path"], (kGolden / "sweep").string());
  EXPECT_EQ(a["model"], "cmax-sim");
  EXPECT_EQ(a["interrupted"], false);
  EXPECT_EQ(a["theoretical_hit_rate"], 0.36);
  EXPECT_TRUE(a["cost"].is_null());
  ASSERT_EQ(a["levels"].size(), 3u);
  EXPECT_EQ(a["levels"][0]["concurrency"], 1);
  auto back = summary_from_json(a["overall"]);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->requests, 300u);
  const auto& b = j["runs"][1];
  EXPECT_TRUE(b["theoretical_hit_rate"].is_null());
  EXPECT_EQ(b["interrupted"], true);
  ASSERT_TRUE(b["cost"].is_object());
  auto bill = bill_from_json(b["cost"]);
  ASSERT_TRUE(bill) << bill.error().message;
  EXPECT_DOUBLE_EQ(bill->run_usd, 0.13315);
  EXPECT_EQ(compare_json({})["runs"].size(), 0u);
}

TEST(CompareSvg, WellFormedAndSelfContained) {
  std::vector<RunView> runs = {run("a<b & \"c\" 'd'", 0.36, 0.4, true, true),
                               run("e\x01\xff>", 0.75, -1, true, false),
                               run("plain", -1, 0.9, false, true)};
  for (const std::string& svg : all_svgs(runs)) {
    EXPECT_EQ(xml_problem(svg), "") << svg;
    EXPECT_FALSE(has_non_finite(svg)) << svg;
    EXPECT_EQ(svg.find("<script"), std::string::npos);
    EXPECT_EQ(svg.find("href"), std::string::npos);
    EXPECT_EQ(count(svg, "http"), 1u);  // the SVG namespace, nothing outside the document
    EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot; &apos;d&apos;"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("a<b"), std::string::npos);
    EXPECT_EQ(svg.find('\x01'), std::string::npos);
    EXPECT_EQ(svg.find('\xff'), std::string::npos);
  }
}

TEST(CompareSvg, OneSeriesPerRun) {
  std::vector<RunView> runs = {run("a", 0.36, 0.4, true, true), run("b", 0.75, -1, true, false),
                               run("c", 0.99, 0.99, false, true)};
  auto latency = svg_latency_vs_concurrency(runs);
  EXPECT_EQ(count(latency, "class=\"series\""), 2u);  // c has no sweep
  EXPECT_EQ(count(latency, "class=\"p50\""), 2u);
  EXPECT_EQ(count(latency, "class=\"p99\""), 2u);
  EXPECT_EQ(count(latency, "stroke-dasharray"), 2u + 1u);  // the p99 paths and the legend's key
  EXPECT_NE(latency.find("not plotted (no concurrency sweep): c"), std::string::npos) << latency;
  EXPECT_NE(latency.find("TTFT (ms)"), std::string::npos);
  EXPECT_NE(latency.find(">8<"),
            std::string::npos);  // the concurrency ticks are labelled 1, 2, 4, 8
  EXPECT_EQ(count(latency, "<circle"), 2u * 4u * 2u);  // 2 runs x 4 levels x (p50, p99)

  auto hit = svg_hit_rate(runs);
  EXPECT_EQ(count(hit, "class=\"series\""), 3u);
  EXPECT_NE(hit.find("36.0%"), std::string::npos);
  EXPECT_NE(hit.find(">n/a<"), std::string::npos);  // b's theoretical rate is unknown
  EXPECT_NE(hit.find("hit rate (% of prompt tokens)"), std::string::npos);

  auto cost = svg_cost(runs);
  EXPECT_EQ(count(cost, "class=\"series\""), 2u);  // b has no bill
  EXPECT_NE(cost.find("not plotted (no bill"), std::string::npos) << cost;
  EXPECT_NE(cost.find("(3.00x)"), std::string::npos) << cost;
  EXPECT_NE(cost.find("$ per million tokens"), std::string::npos);

  // Colours follow the run's position, so a run keeps its colour across the three charts.
  EXPECT_NE(latency.find("data-run=\"b\">\n<path class=\"p50\" fill=\"none\" stroke=\"#ff7f0e\""),
            std::string::npos)
      << latency;
}

TEST(CompareSvg, EmptyAndDegenerateInput) {
  for (const std::string& svg : all_svgs({})) {
    EXPECT_EQ(xml_problem(svg), "") << svg;
    EXPECT_NE(svg.find("no data"), std::string::npos) << svg;
    EXPECT_EQ(count(svg, "class=\"series\""), 0u);
  }
  // No sweep, no bill: the charts that need them say so and name the runs.
  std::vector<RunView> bare = {run("x", 0.5, 0.5, false, false)};
  auto latency = svg_latency_vs_concurrency(bare);
  EXPECT_NE(latency.find("no data"), std::string::npos);
  EXPECT_NE(latency.find("not plotted (no concurrency sweep): x"), std::string::npos) << latency;
  auto cost = svg_cost(bare);
  EXPECT_NE(cost.find("no data"), std::string::npos);
  EXPECT_NE(cost.find(": x"), std::string::npos) << cost;

  // Non-finite and absurd numbers must not reach the output.
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  RunView odd = run("odd", nan, inf, true, true);
  odd.levels.emplace_back(0, summary(0.5, 1, 2));  // concurrency 0 cannot sit on a log axis
  odd.levels[1].second.ttft.p99_ms = inf;
  odd.levels[2].second.ttft.p50_ms = 1e300;
  odd.bill.usd_per_mtok = nan;
  odd.bill.ratio_to_reference = inf;
  odd.overall.output_tokens_per_s = nan;
  std::vector<RunView> runs = {odd, run("single", 0.2, 0.3, false, true)};
  runs[1].levels.emplace_back(16, summary(0.2, 5, 9));  // one level only
  for (const std::string& svg : all_svgs(runs)) {
    EXPECT_EQ(xml_problem(svg), "") << svg;
    EXPECT_FALSE(has_non_finite(svg)) << svg;
  }
  std::string table = compare_table(runs);
  EXPECT_FALSE(has_non_finite(table)) << table;
  EXPECT_NO_THROW(compare_json(runs).dump());
}

}  // namespace
}  // namespace cmax::loadgen

namespace cmax::loadgen {
namespace {

// Issue 35: with one run the hit-rate and cost legends' swatches are in its bars' colour, not ink.
TEST(CompareCharts, OneRunsLegendSwatchesHaveItsBarsColour) {
  std::vector<RunView> one{run("a", 0.9, 0.95, false, true)};
  for (const auto& [svg, entry] : {std::pair{svg_hit_rate(one), std::string(">measured (cached/prompt)<")},
                                   std::pair{svg_cost(one), std::string(">measured hit rate<")}}) {
    const auto legend = svg.find(entry);
    ASSERT_NE(legend, std::string::npos) << svg;
    const auto rect = svg.rfind("<rect", legend);
    ASSERT_NE(rect, std::string::npos);
    EXPECT_NE(svg.substr(rect, legend - rect).find("fill=\"#1f77b4\""), std::string::npos) << svg.substr(rect, legend - rect);
  }
}

}  // namespace
}  // namespace cmax::loadgen
