#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include "html/views.h"
#include "html_test_util.h"
#include "report/run_dir.h"

namespace cmax::html {
namespace {

namespace fs = std::filesystem;

TEST(HtmlViews, SlaViewKeepsMonthsTotalsAndWorstEntitiesFirst) {
  auto v = parse_sla_view(test::kSlaDoc);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->months, (std::vector<std::string>{"2026-04", "2026-05", "2026-06"}));
  EXPECT_DOUBLE_EQ(v->target_percent, 99.5);
  ASSERT_EQ(v->total.cells.size(), 3u);
  EXPECT_DOUBLE_EQ(v->total.cells[2]->availability_percent, 98.0);
  EXPECT_TRUE(v->total.cells[2]->below_target) << "the total is judged against the target too";
  EXPECT_FALSE(v->total.cells[0]->below_target);
  ASSERT_EQ(v->entities.size(), 3u);
  EXPECT_EQ(v->entities[0].name, "r03");  // 93.1 is the worst
  EXPECT_EQ(v->entities[1].name, "r01");
  ASSERT_EQ(v->entities[0].cells.size(), 3u);
  EXPECT_FALSE(v->entities[0].cells[0]) << "no downtime in April: no cell";
  EXPECT_DOUBLE_EQ(v->entities[1].cells[0]->credit, 10368);
  ASSERT_EQ(v->cancellations.size(), 1u);
  EXPECT_EQ(v->cancellations[0], "r03 2026-06: availability 93.1000% is below 95%");
  EXPECT_DOUBLE_EQ(v->credit_total, 10368);
}

TEST(HtmlViews, SlaViewShowsAtMostTheWorstRows) {
  std::string months = R"({"schema": "cmax.sla/1", "contract": {"scope": "node", "availability_target_percent": 99},
                           "months": [{"month": "2026-01", "entities": [)";
  for (int i = 0; i < 40; ++i)
    months += fmt::format("{}{{\"name\": \"n{}\", \"availability_percent\": {}}}", i ? "," : "", i, 90 + i * 0.2);
  months += "]}]}";
  auto v = parse_sla_view(months);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->entities_with_downtime, 40u);
  ASSERT_EQ(v->entities.size(), kMaxSlaRows);
  EXPECT_EQ(v->entities.front().name, "n0");
  EXPECT_EQ(v->entities.back().name, fmt::format("n{}", kMaxSlaRows - 1));
}

TEST(HtmlViews, ScanViewPutsOpenSevereIncidentsFirstAndCountsActionable) {
  auto v = parse_scan_view(test::kScanDoc);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->total, 4u);
  EXPECT_EQ(v->actionable, 2u) << "reboot_node and restart_app; the resolved drain and the monitor do not count";
  ASSERT_EQ(v->incidents.size(), 4u);
  EXPECT_EQ(v->incidents[0].action, "reboot_node");
  EXPECT_EQ(*v->incidents[0].code, 79);
  EXPECT_EQ(v->incidents[1].action, "restart_app");
  EXPECT_EQ(v->incidents[2].action, "monitor");
  EXPECT_TRUE(v->incidents[3].resolved);
}

TEST(HtmlViews, DrillAndClusterViews) {
  auto d = parse_drill_view(test::kDrillDoc);
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->nodes.size(), 3u);
  EXPECT_EQ(d->nodes[0].stages[2].how, "n3 joined reservation drill");
  EXPECT_EQ(d->nodes[1].stages[1].verdict, "never");
  EXPECT_EQ(*d->nodes[1].stages[1].threshold_ms, 3000);
  EXPECT_FALSE(d->nodes[2].error.empty());
  auto c = parse_cluster_view(test::kClusterDoc);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->nodes.size(), 2u);
  EXPECT_EQ(c->nodes[0].fail, 2);
  EXPECT_EQ(c->nodes[0].worst_action, "reboot_node");
  EXPECT_EQ(c->nodes[1].detail, "Task launch failed on node n3");
}

TEST(HtmlViews, WrongSchemaAndGarbageAreErrorsNamingTheFile) {
  auto a = parse_sla_view(R"({"schema": "cmax.scan/1"})");
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("sla.json: schema \"cmax.scan/1\" is not cmax.sla/"), std::string::npos);
  auto b = parse_drill_view("{\"schema\": \"cmax.drill/1\", \"nodes\": [");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("drill.json: not JSON"), std::string::npos);
  // Fields of the wrong type are skipped, not thrown.
  auto c = parse_cluster_view(R"({"schema": "cmax.cluster/1", "nodes": [{"node": 7, "seconds": "x", "failing": [1]}]})");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->nodes[0].node, "");
}

TEST(HtmlViews, InlineSvgDropsTheDeclarationAndRefusesScripts) {
  auto s = inline_svg("<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"><g/></svg>\n");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(*s, "<svg xmlns=\"http://www.w3.org/2000/svg\"><g/></svg>");
  EXPECT_FALSE(inline_svg("<svg><script>alert(1)</script></svg>"));
  EXPECT_FALSE(inline_svg("<svg><image href=\"http://example.com/x.png\"/></svg>"));
  EXPECT_FALSE(inline_svg("no chart here"));
}

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / fmt::format("cmax-html-{}-{}", ::getpid(), counter_++)) {
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

TEST(HtmlViews, LoadRunReadsEveryDocumentAndFindsAMovedChart) {
  TempDir dir;
  audit::AuditReport report;
  report.host = "h1";
  audit::Finding f;
  f.check_id = "security.aslr";
  f.outcome = audit::Outcome::pass;
  report.findings = {f};
  ASSERT_TRUE(report::write_run_dir(report, 0, dir.path().string()));
  std::ofstream(dir.path() / "sla.json") << test::kSlaDoc;
  std::ofstream(dir.path() / "drill.json") << test::kDrillDoc;
  std::ofstream(dir.path() / "scan.json") << "{\"schema\": \"cmax.scan/1\", \"incidents\": [";  // truncated
  // nccl.json written elsewhere names its chart by the old path; the chart sits beside it now.
  std::ofstream(dir.path() / "nccl.json")
      << R"({"schema": "cmax.nccl/1", "runs": [{"file": "a.log", "collective": "all_reduce", "verdict": "pass",
             "chart": "/nonexistent/old/a-1.svg"}, {"file": "b.log", "chart": "/nonexistent/b-1.svg"}]})";
  std::ofstream(dir.path() / "a-1.svg") << "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>";
  auto rubric = score::load_rubric(std::nullopt);
  ASSERT_TRUE(rubric) << rubric.error().message;
  auto r = load_run(dir.path().string(), *rubric);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->host, "h1");
  EXPECT_EQ(r->findings.size(), 1u);
  ASSERT_TRUE(r->sla);
  ASSERT_TRUE(r->drill);
  EXPECT_FALSE(r->scan) << "a truncated scan.json is a warning, not a section";
  ASSERT_TRUE(r->nccl);
  ASSERT_EQ(r->nccl->runs.size(), 2u);
  EXPECT_EQ(r->nccl->runs[0].svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>");
  EXPECT_TRUE(r->nccl->runs[1].svg.empty());
  EXPECT_NE(r->nccl->runs[1].svg_error.find("b-1.svg"), std::string::npos);
  bool scan_warned = false, chart_warned = false;
  for (const auto& w : r->warnings) {
    scan_warned = scan_warned || w.find("scan.json: not JSON") != std::string::npos;
    chart_warned = chart_warned || w.find("chart of b.log") != std::string::npos;
  }
  EXPECT_TRUE(scan_warned);
  EXPECT_TRUE(chart_warned);
  EXPECT_FALSE(r->bench);
}

TEST(HtmlViews, LoadRunWithoutResultsJsonFails) {
  TempDir dir;
  auto rubric = score::load_rubric(std::nullopt);
  ASSERT_TRUE(rubric);
  auto r = load_run(dir.path().string(), *rubric);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("results.json"), std::string::npos);
}

}  // namespace
}  // namespace cmax::html
