#pragma once
// cmax endpoint compare: several runs' bench.json side by side, as a table, JSON and SVG charts
// (latency against concurrency, hit rate against the theoretical, cost per million tokens). Pure
// except read_bench (which reads one file).

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"
#include "loadgen/metrics.h"
#include "loadgen/pricing.h"

namespace cmax::loadgen {

/// What compare needs of one run.
struct RunView {
  std::string label;       ///< the provider, else the run directory's name
  std::string path;
  std::string model, endpoint;
  Summary overall;
  std::vector<std::pair<int, Summary>> levels;  ///< concurrency sweep levels, ascending
  double theoretical_hit_rate = -1;             ///< -1 unknown
  bool has_bill = false;
  Bill bill;
  bool interrupted = false;
};

/// Reads RUN (a run directory holding bench.json, or the bench.json itself). Errors name the path
/// and what is wrong (missing, not JSON, another schema).
Result<RunView> read_bench(const std::string& path);

/// The comparison as cells: the column heads, one row per run, and the notes under the table
/// (what "*" and the reference mean). compare_table and the HTML report both draw it.
struct CompareCells {
  std::vector<std::string> heads;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;
};
CompareCells compare_cells(const std::vector<RunView>& runs);

/// A fixed-width table: one row per run (label, requests, ok %, hit rate, theoretical, TTFT p50/p99,
/// TPOT p50, output tok/s, $/Mtok, bill at reference), a legend line under it.
std::string compare_table(const std::vector<RunView>& runs);
/// {"schema":"cmax.endpoint.compare/1","runs":[...]} (docs/schemas/endpoint-bench.md).
nlohmann::json compare_json(const std::vector<RunView>& runs);

/// Self-contained SVG documents (no scripts, no external references), one series per run in a
/// fixed palette, axes labelled with units, a legend. An empty run list gives a chart saying "no data".
std::string svg_latency_vs_concurrency(const std::vector<RunView>& runs);  ///< TTFT p50 and p99 per level
std::string svg_hit_rate(const std::vector<RunView>& runs);   ///< measured vs theoretical bars
std::string svg_cost(const std::vector<RunView>& runs);       ///< $/Mtok measured vs at reference hit rate

}  // namespace cmax::loadgen
