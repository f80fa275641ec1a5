#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "golden_table.h"
#include "nccl/analyze.h"
#include "nccl/chart.h"
#include "nccl/reference.h"
#include "support/xml_check.h"

namespace cmax::nccl {
namespace {

using cmax::test::xml_problem;

std::size_t count(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string_view::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

std::vector<Reference> refs() {
  auto r = builtin_references();
  EXPECT_TRUE(r.has_value());
  return r ? *r : std::vector<Reference>{};
}

TEST(NcclChart, CheckerCatchesBrokenXml) {
  EXPECT_EQ(xml_problem("<svg><g></g></svg>"), "");
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(xml_problem("<svg>a < b</svg>"), "");
  EXPECT_NE(xml_problem("<svg>a & b</svg>"), "");
  EXPECT_NE(xml_problem("<svg a=\"<\"/>"), "");
  EXPECT_NE(xml_problem("<svg/><svg/>"), "");
}

TEST(NcclChart, Golden02IsWellFormedWithEveryPointAndTheDip) {
  auto runs = testing::read_golden("02_", false);
  ASSERT_EQ(runs.size(), 1u);
  const nccl::Run& run = runs[0];
  auto a = analyze_run(run, refs());
  std::string svg = render_svg(run, a);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("@font-face"), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"pt oop\""), run.rows.size());
  EXPECT_EQ(count(svg, "class=\"pt ip\""), run.rows.size());
  EXPECT_NE(svg.find("class=\"flag\" data-size=\"2097152\""), std::string::npos);
  EXPECT_NE(svg.find(">dip</text>"), std::string::npos);
  EXPECT_NE(svg.find("all_reduce · 32 ranks · 4 nodes · NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(svg.find("class=\"fit\""), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);  // the reference line
  EXPECT_NE(svg.find("365.8 GB/s"), std::string::npos);
  EXPECT_NE(svg.find(">1 MiB<"), std::string::npos);
  EXPECT_NE(svg.find(">1 GiB<"), std::string::npos);
  // For people: the chart of the issue-309 4-node run, to look at.
  std::ofstream("/tmp/nccl_02.svg") << svg;
}

TEST(NcclChart, EscapesText) {
  nccl::Run run;
  run.collective = Collective::kAllReduce;
  run.gpu_model = "GPU <&> \"x\" 'y'";
  run.ranks = 2;
  run.nodes = 1;
  for (int e = 20; e <= 30; ++e) {
    Row r;
    r.size_bytes = std::uint64_t{1} << e;
    r.out_of_place.busbw_gbps = 10.0 * (e - 19);
    run.rows.push_back(r);
  }
  auto a = analyze_run(run, {});
  std::string svg = render_svg(run, a);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("GPU &lt;&amp;&gt; &quot;x&quot; &apos;y&apos;"), std::string::npos);
  EXPECT_EQ(svg.find("<&>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"pt oop\""), run.rows.size());
  EXPECT_EQ(count(svg, "class=\"pt ip\""), 0u);
}

TEST(NcclChart, EmptyAndSingleRowRunsRender) {
  nccl::Run run;
  auto a = analyze_run(run, {});
  EXPECT_EQ(xml_problem(render_svg(run, a)), "");
  auto one = testing::read_golden("14_", false, Collective::kAllToAll);
  ASSERT_EQ(one.size(), 1u);
  auto b = analyze_run(one[0], {});
  std::string svg = render_svg(one[0], b);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "class=\"pt oop\""), 1u);
  EXPECT_NE(svg.find("plateau"), std::string::npos);
}

}  // namespace
}  // namespace cmax::nccl
