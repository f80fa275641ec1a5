#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "golden_table.h"
#include "nccl/analyze.h"
#include "nccl/chart.h"
#include "nccl/reference.h"

namespace cmax::nccl {
namespace {

// A minimal XML well-formedness check, enough for what render_svg writes: one root, tags balanced
// and properly nested, attribute values quoted, no '<' or bare '&' in text or attribute values.
// Returns "" when well-formed, else what is wrong and where.
std::string xml_problem(std::string_view x) {
  std::vector<std::string> open;
  std::size_t i = 0;
  bool root_seen = false;
  auto check_entities = [](std::string_view text) -> bool {
    for (std::size_t k = 0; k < text.size(); ++k) {
      if (text[k] == '<') return false;
      if (text[k] != '&') continue;
      auto semi = text.find(';', k);
      if (semi == std::string_view::npos) return false;
      auto ent = text.substr(k + 1, semi - k - 1);
      if (ent != "amp" && ent != "lt" && ent != "gt" && ent != "quot" && ent != "apos")
        return false;
    }
    return true;
  };
  while (i < x.size()) {
    auto lt = x.find('<', i);
    std::string_view text = x.substr(i, lt == std::string_view::npos ? x.size() - i : lt - i);
    if (!check_entities(text)) return "bad text near offset " + std::to_string(i);
    if (open.empty() && text.find_first_not_of(" \n\r\t") != std::string_view::npos)
      return "text outside the root at " + std::to_string(i);
    if (lt == std::string_view::npos) break;
    if (x.substr(lt, 5) == "<?xml") {
      auto end = x.find("?>", lt);
      if (end == std::string_view::npos || lt != 0) return "bad XML declaration";
      i = end + 2;
      continue;
    }
    // Find the tag's end, skipping quoted attribute values.
    std::size_t k = lt + 1;
    char quote = 0;
    for (; k < x.size(); ++k) {
      if (quote) {
        if (x[k] == quote)
          quote = 0;
        else if (x[k] == '<')
          return "'<' in an attribute at " + std::to_string(k);
      } else if (x[k] == '"' || x[k] == '\'') {
        quote = x[k];
      } else if (x[k] == '>') {
        break;
      }
    }
    if (k >= x.size()) return "unterminated tag at " + std::to_string(lt);
    std::string_view tag = x.substr(lt + 1, k - lt - 1);
    if (!check_entities(tag)) return "bad entity in a tag at " + std::to_string(lt);
    if (tag.starts_with("/")) {
      std::string name(tag.substr(1));
      if (open.empty() || open.back() != name)
        return "closing </" + name + "> does not match at " + std::to_string(lt);
      open.pop_back();
    } else {
      bool self_closing = tag.ends_with("/");
      std::string name(tag.substr(0, tag.find_first_of(" \n/")));
      if (name.empty()) return "empty tag name at " + std::to_string(lt);
      if (open.empty()) {
        if (root_seen) return "a second root element at " + std::to_string(lt);
        root_seen = true;
      }
      if (!self_closing) open.push_back(name);
    }
    i = k + 1;
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  if (!root_seen) return "no root element";
  return "";
}

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
