#include "html/write.h"

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text_file.h"

namespace cmax::html {
namespace {

namespace fs = std::filesystem;


std::vector<std::string> sections_of(const RunReport& r) {
  std::vector<std::string> s{"scorecard", "findings"};
  if (r.cluster) s.emplace_back("nodes");
  if (r.scan) s.emplace_back("kernel log");
  if (r.nccl) s.emplace_back("nccl");
  if (r.drill) s.emplace_back("drill");
  if (r.bench) s.emplace_back("endpoint");
  if (r.sla) s.emplace_back("sla");
  return s;
}

}  // namespace

Result<Written> write_report(const std::vector<std::string>& dirs, const score::Rubric& rubric, std::string out,
                             const PageMeta& meta) {
  if (dirs.empty()) return fail("cmax report: no run directory given");
  Written w;
  for (const auto& d : dirs) {
    auto r = load_run(d, rubric);
    if (!r) return fail("{}", r.error().message);
    w.runs.push_back(std::move(*r));
  }
  if (out.empty()) out = dirs.size() == 1 ? (fs::path(dirs[0]) / kReportFile).string() : "cmax-report.html";
  // Links into a run directory (its stages' logs) are relative to the page, so that the two can
  // move together.
  const fs::path page_dir = fs::absolute(fs::path(out)).parent_path().lexically_normal();
  for (auto& r : w.runs) {
    const fs::path rel = fs::absolute(fs::path(r.dir)).lexically_normal().lexically_relative(page_dir);
    const std::string s = rel.empty() ? fs::absolute(fs::path(r.dir)).lexically_normal().string() : rel.generic_string();
    r.href_base = s == "." || s.empty() ? "" : (s.back() == '/' ? s : s + "/");
  }
  Page page = render_page(w.runs, rubric, meta);
  if (auto wr = core::write_text_file_atomic(out, page.html); !wr) return fail("{}", wr.error().message);
  w.path = out;
  w.bytes = page.html.size();
  w.charts = std::move(page.charts);
  w.sections = std::move(page.sections);
  return w;
}

std::string render_summary(const Written& w) {
  std::string s;
  for (const auto& r : w.runs) {
    std::array<int, 5> by{};
    for (const auto& f : r.findings) ++by[static_cast<std::size_t>(f.outcome)];
    std::string sections;
    for (const auto& x : sections_of(r)) sections += (sections.empty() ? "" : ", ") + x;
    s += fmt::format("{}: {} {} (confidence {:.0f}%) · findings {} fail, {} warn, {} unverified, {} pass · {}\n",
                     r.label, r.card.tier, r.card.total ? fmt::format("{:.1f}", *r.card.total) : "--",
                     r.card.confidence * 100, by[2], by[1], by[4], by[0], sections);
    for (const auto& x : r.warnings) s += fmt::format("  warning: {}\n", x);
  }
  s += fmt::format("report: {} ({:.0f} KB, {} chart{})\n", w.path, static_cast<double>(w.bytes) / 1024.0,
                   w.charts.size(), w.charts.size() == 1 ? "" : "s");
  return s;
}

std::string report_to_json(const Written& w) {
  nlohmann::ordered_json j;
  j["schema"] = kReportSchema;
  j["path"] = w.path;
  j["bytes"] = w.bytes;
  j["charts"] = w.charts;
  j["sections"] = w.sections;
  auto& runs = j["runs"] = nlohmann::ordered_json::array();
  for (const auto& r : w.runs) {
    std::array<int, 5> by{};
    for (const auto& f : r.findings) ++by[static_cast<std::size_t>(f.outcome)];
    nlohmann::ordered_json x;
    x["dir"] = r.dir;
    x["label"] = r.label;
    x["tier"] = r.card.tier;
    x["total"] = r.card.total ? nlohmann::ordered_json(std::round(*r.card.total * 100) / 100) : nullptr;
    x["confidence"] = std::round(r.card.confidence * 10000) / 10000;
    x["findings"] = {{"pass", by[0]}, {"warn", by[1]}, {"fail", by[2]}, {"not_applicable", by[3]}, {"unverified", by[4]}};
    x["sections"] = sections_of(r);
    x["warnings"] = r.warnings;
    runs.push_back(std::move(x));
  }
  return j.dump(2) + "\n";
}

}  // namespace cmax::html
