// libFuzzer target: cmax report's readers of stage documents (cluster, scan, nccl, drill, sla) and
// the page and charts drawn from whatever they accept. Invariants: no crash on any bytes; a chart
// never carries markup from its input (every string is escaped: the page holds no "<script");
// inline_svg never returns text outside one <svg>...</svg>.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "html/charts.h"
#include "html/page.h"
#include "html/views.h"
#include "score/rubric.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

const cmax::score::Rubric& rubric() {
  static const cmax::score::Rubric r = *cmax::score::load_rubric(std::nullopt);
  return r;
}

// The input as a document of each schema: the fuzzer finds the shapes, the schema is given.
std::string with_schema(std::string_view data, std::string_view schema) {
  std::string s(data);
  auto brace = s.find('{');
  if (brace == std::string::npos) return s;
  s.insert(brace + 1, "\"schema\": \"" + std::string(schema) + "\",");
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  using namespace cmax::html;
  const std::string_view data(reinterpret_cast<const char*>(bytes), size);
  RunReport run;
  run.label = "fuzz";
  run.card.categories.resize(cmax::audit::kCategoryCount);
  if (auto v = parse_cluster_view(with_schema(data, "cmax.cluster/1"))) run.cluster = *v;
  if (auto v = parse_scan_view(with_schema(data, "cmax.scan/1"))) {
    check(v->incidents.size() <= kMaxIncidents);
    run.scan = *v;
  }
  if (auto v = parse_nccl_view(with_schema(data, "cmax.nccl/1"))) run.nccl = *v;
  if (auto v = parse_drill_view(with_schema(data, "cmax.drill/1"))) run.drill = *v;
  if (auto v = parse_sla_view(with_schema(data, "cmax.sla/1"))) {
    check(v->entities.size() <= kMaxSlaRows);
    for (const auto& e : v->entities) check(e.cells.size() == v->months.size());
    run.sla = *v;
  }
  if (auto svg = inline_svg(data)) {
    check(svg->rfind("<svg", 0) == 0);
    check(svg->size() >= 10 && svg->compare(svg->size() - 6, 6, "</svg>") == 0);
    check(svg->find("<script") == std::string::npos);
  }
  // Any string a document carried reaches the page escaped.
  cmax::audit::Finding f;
  f.check_id = std::string(data.substr(0, 64));
  f.observed = std::string(data.substr(0, 256));
  run.findings.push_back(f);
  if (run.nccl)
    for (auto& c : run.nccl->runs) c.svg.clear();  // stage charts come through inline_svg, checked above
  auto page = render_page({run}, rubric(), {"t", "v"});
  check(page.html.find("<script") == std::string::npos);
  return 0;
}
