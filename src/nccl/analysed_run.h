#pragma once
// One analysed nccl-tests run and its place in the cmax.nccl/1 report: the JSON of a run and of an
// anomaly, and the analysis of a set of runs (verdicts, charts, scaling over node counts), shared
// by `cmax nccl analyze` and the sweep.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "nccl/analyze.h"
#include "nccl/parse.h"
#include "nccl/reference.h"

namespace cmax::nccl {

/// One analysed run, and where it came from.
struct AnalysedRun {
  std::string file;
  std::size_t index = 0;  ///< the run's position in its file
  Run run;
  RunAnalysis analysis;
  std::string chart;    ///< the SVG's path; "" when not written
  std::string label;    ///< for sweeps: "all_reduce-2n-golden"
  int nodes_hint = 0;   ///< for sweeps: the node count the step asked for
  std::string variant;  ///< for sweeps: "golden", "network", "ring"
};

/// An anomaly as the report writes it.
nlohmann::json anomaly_json(const Anomaly& a);

/// A run as the report's `runs[]` entry (docs/schemas/nccl.md).
nlohmann::json run_json(const AnalysedRun& a);

/// The chart's file name: "<label>.svg" for sweeps, "<log stem>-<index+1>.svg" otherwise.
std::string chart_name(const AnalysedRun& a);

/// A scaling anomaly and the group of runs it was judged on ("all_reduce H100 (golden) in DIR").
struct ScalingFinding {
  std::string group;
  Anomaly anomaly;
};

/// The report's `scaling` array.
nlohmann::json scaling_json(const std::vector<ScalingFinding>& scaling);

/// Analyses every run against `refs` (a sweep's variant against its own numbers), writes an SVG
/// chart each into `dir` when `charts`, and judges scaling per collective, GPU, variant and
/// directory into `scaling_out`. True when any run or any scaling group has an anomaly.
bool analyse_runs(std::vector<AnalysedRun>& runs, const std::vector<Reference>& refs, const std::string& dir,
                  bool charts, std::vector<ScalingFinding>& scaling_out);

}  // namespace cmax::nccl
