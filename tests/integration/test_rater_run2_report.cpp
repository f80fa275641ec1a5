// What a rater met in report.html after `cmax run --plan standard` on a six-node trial (issue 35),
// each defect on a run directory made by real commands: `cmax run --plan quick` (its own
// campaign.json, logs and the report it wrote while its report stage ran), a real `cmax nccl
// sweep` of cmax-collbench over MPI on 1 and 2 "nodes", and a bench.json of a real run without
// prices whose measured hit rate is above the achievable one; then `cmax report`.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "support/daemon.h"
#include "support/temp_host.h"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

struct Ran {
  int code = -1;
  std::string out, err;
};

Ran run(std::vector<std::string> argv, std::chrono::milliseconds timeout = 300s) {
  auto r = cmax::core::run_process({std::move(argv), timeout, 64u << 20, {}});
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  if (!r) return {};
  return {r->timed_out ? -2 : r->exit_code, r->out, r->err};
}

Ran cmax(std::vector<std::string> args, std::chrono::milliseconds timeout = 300s) {
  args.insert(args.begin(), CMAX_BIN);
  return run(std::move(args), timeout);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::size_t count(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string_view::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

// The HTML between the element with id="ID" and the next heading of its level or above.
std::string section(const std::string& html, std::string_view id) {
  const auto at = html.find(fmt::format("id=\"{}\"", id));
  if (at == std::string::npos) return {};
  auto end = html.find("<h3 ", at);
  end = std::min(end, html.find("<h2 ", at));
  return html.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

class RaterRun2Report : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new cmax::test::TempHost();
    dir_ = tmp_->dir() / "run";
    // 1. A real campaign: the quick plan (audit, isolation, scan, score, report) on this machine.
    const Ran ran = cmax({"run", "--plan", "quick", "--out", dir_.string()});
    setup_error_ = ran.code < 0 || ran.code > 2 || !fs::exists(dir_ / "campaign.json")
                       ? fmt::format("cmax run --plan quick: exit {}\n{}\n{}", ran.code, ran.out, ran.err)
                       : "";
    if (!setup_error_.empty()) return;
    run_page_ = slurp(dir_ / "report.html");  // written while the report stage ran
#ifdef CMAX_COLLBENCH_BIN
    // 2. A real NCCL sweep: cmax-collbench over MPI on one machine, 1 and 2 "nodes".
    const Ran sweep = cmax({"nccl", "sweep", "--collbench", CMAX_COLLBENCH_BIN, "--launcher", "mpirun",
                            "--node-counts", "1,2", "--ranks-per-node", "2", "-e", "1M", "-n", "2", "-w", "1", "--out",
                            (tmp_->dir() / "nccl").string()});
    if (fs::exists(tmp_->dir() / "nccl" / "nccl.json"))
      fs::copy_file(tmp_->dir() / "nccl" / "nccl.json", dir_ / "nccl.json");
    else
      setup_error_ = fmt::format("cmax nccl sweep: exit {}\n{}\n{}", sweep.code, sweep.out, sweep.err);
#endif
    // 3. An endpoint run without prices, whose endpoint reported more cached tokens than the
    // prompts sent could give, and the warning the bench writes for it.
    json bench = json::parse(slurp(fs::path(CMAX_SOURCE_DIR) / "tests/golden/endpoint_bench/sweep/bench.json"));
    bench["cost"] = nullptr;
    bench["workload"]["theoretical_hit_rate"] = 0.2;
    bench["warnings"] = {"measured prefix-cache hit rate 36.0% is above the achievable 20.0%: the endpoint's "
                         "cached-token counts are not to be trusted"};
    std::ofstream(dir_ / "bench.json") << bench.dump(1);
    // 4. The audit stage as it failed on the trial: exit 3, its log's last line the report's path.
    json c = json::parse(slurp(dir_ / "campaign.json"));
    for (auto& st : c["stages"])
      if (st["id"] == "audit") {
        const std::string report_line =
            fmt::format("Report: {}/report.html (3 charts; re-render: cmax report {})", dir_.string(), dir_.string());
        st["status"] = "failed";
        st["exit_code"] = 3;
        st["error"] = fmt::format("exit 3 (last line: {})", report_line);
        std::ofstream(dir_ / st["log"].get<std::string>(), std::ios::app)
            << "cmax run: no node was evaluated: every node not_scheduled (n1, n2, n3, n4, spare1, spare2)\n"
            << report_line << "\n# failed after 2.0 s, exit 3\n";
      }
    std::ofstream(dir_ / "campaign.json") << c.dump(2);
    const Ran rep = cmax({"report", dir_.string()}, 120s);
    if (rep.code != 0) setup_error_ = fmt::format("cmax report: exit {}\n{}\n{}", rep.code, rep.out, rep.err);
    page_ = slurp(dir_ / "report.html");
  }
  static void TearDownTestSuite() {
    delete tmp_;
    tmp_ = nullptr;
  }
  void SetUp() override { ASSERT_EQ(setup_error_, ""); }

  static inline cmax::test::TempHost* tmp_ = nullptr;
  static inline fs::path dir_;
  static inline std::string setup_error_, run_page_, page_;
};

// Defect 1: 18 NCCL charts and no table; now a summary and a scaling table first, the charts
// behind one closed <details> per collective.
TEST_F(RaterRun2Report, NcclSummaryAndScalingTablesComeBeforeChartsGroupedByCollective) {
#ifndef CMAX_COLLBENCH_BIN
  GTEST_SKIP() << "cmax-collbench was not built (no MPI found)";
#endif
  const json nccl = json::parse(slurp(dir_ / "nccl.json"));
  ASSERT_GE(nccl["runs"].size(), 2u) << nccl.dump(1);
  const std::string s = section(page_, "run-0-nccl");
  ASSERT_FALSE(s.empty());
  const auto summary = s.find("<table class=\"nccl-summary\">");
  const auto scaling = s.find("<table class=\"nccl-scaling\">");
  const auto chart = s.find("data-chart=\"nccl\"");
  ASSERT_NE(summary, std::string::npos);
  ASSERT_NE(scaling, std::string::npos);
  ASSERT_NE(chart, std::string::npos);
  EXPECT_LT(summary, scaling);
  EXPECT_LT(scaling, chart);
  // A row per run, with its step and its measured peak as nccl.json has it.
  const std::string table = s.substr(summary, s.find("</table>", summary) - summary);
  EXPECT_EQ(count(table, "<tr><td>"), nccl["runs"].size());
  std::set<std::string> collectives;
  std::map<std::string, int> step_nodes;
  for (const auto& st : nccl["sweep"]["steps"]) step_nodes[st["step"]] = st["nodes"];
  for (const auto& r : nccl["runs"]) {
    collectives.insert(r["collective"].get<std::string>());
    // The step's node count (2 ranks a "node", all on this one host: the log shows 1 host).
    const int nodes = step_nodes[r["step"]];
    EXPECT_NE(table.find(fmt::format(">{}</a></td><td>{}</td><td class=\"num\">{}", r["step"].get<std::string>(),
                                     r["collective"].get<std::string>(), nodes)),
              std::string::npos)
        << r["step"];
    EXPECT_NE(table.find(fmt::format("<td class=\"num\">{:.4g}</td>", r["peak_busbw_gbps"].get<double>())),
              std::string::npos);
  }
  // Scaling: a column per node count.
  EXPECT_NE(s.find("<th class=\"num\">1 node</th><th class=\"num\">2 nodes</th>"), std::string::npos);
  // Every chart inside a closed group of its collective.
  EXPECT_EQ(count(s, "<details class=\"nccl-charts\">"), collectives.size());
  EXPECT_EQ(count(s, "<details class=\"nccl-charts\" open"), 0u);
  EXPECT_EQ(count(s, "data-chart=\"nccl\""), nccl["runs"].size());
  for (std::size_t at = s.find("data-chart=\"nccl\""); at != std::string::npos; at = s.find("data-chart=\"nccl\"", at + 1))
    EXPECT_LT(s.rfind("<details class=\"nccl-charts\">", at), at);
}

// Defect 2: the legends showed the fit's extrapolated peak; now the measured one, the fit a model.
TEST_F(RaterRun2Report, NcclChartLegendsShowTheMeasuredPeak) {
#ifndef CMAX_COLLBENCH_BIN
  GTEST_SKIP() << "cmax-collbench was not built (no MPI found)";
#endif
  const json nccl = json::parse(slurp(dir_ / "nccl.json"));
  const std::string s = section(page_, "run-0-nccl");
  std::size_t fitted = 0;
  for (const auto& r : nccl["runs"]) {
    const auto legend_peak = fmt::format("measured peak {:.4g} GB/s</text>", r["peak_busbw_gbps"].get<double>());
    EXPECT_NE(s.find(legend_peak), std::string::npos) << r["step"];
    if (r["fit"].value("ok", false)) ++fitted;
  }
  EXPECT_EQ(count(s, "class=\"measured-peak\""), nccl["runs"].size());
  static const std::regex kFitPeak(">fit[^<]*\\(peak [0-9.]+ GB/s\\)<");
  EXPECT_FALSE(std::regex_search(s, kFitPeak)) << "a legend still shows the fit's peak";
  EXPECT_EQ(count(s, ">fit (model curve)<") + count(s, ">fit, plateau (model curve)<"), fitted);
}

// Defect 3: the hit-rate legend's swatches were not the bars' colours.
TEST_F(RaterRun2Report, HitRateLegendSwatchesHaveTheColoursOfTheBars) {
  const auto at = page_.find("data-chart=\"endpoint-hit-rate\"");
  ASSERT_NE(at, std::string::npos);
  const std::string svg = page_.substr(at, page_.find("</svg>", at) - at);
  for (std::string kind : {"measured", "theoretical"}) {
    std::set<std::string> bars, swatches;
    static const std::regex kFill("class=\"(bar|swatch) ([a-z]+)\"[^>]*fill=\"(#[0-9a-f]{6})\"");
    for (std::sregex_iterator it(svg.begin(), svg.end(), kFill), end; it != end; ++it)
      if ((*it)[2] == kind) ((*it)[1] == "bar" ? bars : swatches).insert((*it)[3]);
    ASSERT_EQ(swatches.size(), 1u) << kind << "\n" << svg;
    EXPECT_EQ(bars, swatches) << kind;
  }
  EXPECT_NE(svg.find("(above theoretical)"), std::string::npos) << "36% measured against 20% achievable";
}

// Defect 4: an empty cost chart when no prices were given.
TEST_F(RaterRun2Report, NoPricesIsOneLineNotAnEmptyCostChart) {
  EXPECT_EQ(page_.find("data-chart=\"endpoint-cost\""), std::string::npos);
  EXPECT_NE(page_.find("no prices given: pass --prices FILE to cmax endpoint bench"), std::string::npos);
}

// Defect 5: the page cmax run wrote said "report: running" and named logs that were never written.
TEST_F(RaterRun2Report, TheReportStageIsDoneAndOnlyLogsThatExistAreLinked) {
  for (const std::string* page : {&run_page_, &page_}) {
    const std::string& h = *page;
    ASSERT_NE(h.find("id=\"run-0-stages-report\""), std::string::npos);
    EXPECT_EQ(h.find("report: running"), std::string::npos);
    EXPECT_NE(h.find("<h4>report: done</h4>"), std::string::npos);
    static const std::regex kLog("href=\"([^\"]*logs/[^\"]+)\"");
    std::size_t links = 0;
    for (std::sregex_iterator it(h.begin(), h.end(), kLog), end; it != end; ++it, ++links)
      EXPECT_TRUE(fs::is_regular_file(dir_ / (*it)[1].str())) << (*it)[1];
    EXPECT_GT(links, 0u);
    for (const char* missing : {"logs/score.log", "logs/report.log"}) {
      ASSERT_FALSE(fs::exists(dir_ / missing));
      EXPECT_EQ(h.find(missing), std::string::npos) << missing;
    }
  }
}

// Defect 6: "exit 3 (findings)" and the report's path as a failed stage's reason.
TEST_F(RaterRun2Report, StageExitCodesAndReasonsAreAsTheDocsAndTheLogSay) {
  const std::string s = section(page_, "run-0-stages");
  EXPECT_EQ(s.find("(findings)"), std::string::npos);
  EXPECT_NE(s.find("<td class=\"o-fail\">failed</td><td>3 (usage or environment)</td>"), std::string::npos);
  EXPECT_NE(s.find("exit 3 (log: cmax run: no node was evaluated: every node not_scheduled"), std::string::npos);
  EXPECT_EQ(s.find("last line: Report:"), std::string::npos);
  EXPECT_EQ(s.find(dir_.string() + "/report.html"), std::string::npos) << "the report's path is no stage's reason";
}

// Defect 7: a measured hit rate above the achievable one, and bench.json's warning about it.
TEST_F(RaterRun2Report, BenchWarningsAreShownInTheEndpointSection) {
  const auto endpoints = page_.find("id=\"endpoints\"");
  const auto alert = page_.find("<p class=\"alert\"><strong>warning</strong> measured prefix-cache hit rate 36.0% is "
                                "above the achievable 20.0%");
  ASSERT_NE(endpoints, std::string::npos);
  ASSERT_NE(alert, std::string::npos);
  EXPECT_LT(endpoints, alert);
}

}  // namespace
