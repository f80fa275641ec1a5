#pragma once
// What the HTML report shows of one run directory: the scorecard and findings (results.json), and
// whichever stage documents are there (cluster.json, scan.json, nccl.json with its charts,
// drill.json, bench.json, sla.json), each reduced to the fields the page draws. The parsers are
// pure (text in, view out); load_run reads the directory.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/model.h"
#include "core/result.h"
#include "loadgen/compare.h"
#include "score/rubric.h"
#include "score/scorer.h"

namespace cmax::html {

struct ClusterNode {
  std::string node, status, detail;  ///< status: ok | unreachable | failed | timeout | not_scheduled
  double seconds = 0;
  int pass = 0, warn = 0, fail = 0, unverified = 0;
  std::string worst_action;  ///< the node's kernel log: worst open action, "" when not scanned
  std::vector<std::string> failing;
};

struct ClusterView {
  std::string harness, started_at;
  double seconds = 0;
  std::vector<ClusterNode> nodes;
};

struct ScanIncident {
  std::string node, kind, device, action, reason, first_seen, last_seen, sample;
  std::optional<long long> code;
  long long count = 0;
  bool resolved = false;
};

struct ScanView {
  std::vector<std::string> sources;
  std::vector<ScanIncident> incidents;  ///< most severe action first, then by count; at most kMaxIncidents
  std::size_t total = 0;                ///< incidents in the document
  std::size_t actionable = 0;           ///< unresolved with restart_app or stronger
  std::vector<std::string> drills;      ///< "drill 1a2b: 2 incidents (n1)": fault drills' lines, never counted
};

struct NcclChart {
  std::string file, collective, gpu, verdict;
  std::string step, variant;  ///< a sweep's step ("all_reduce-2n-golden") and variant; "" for analyze
  int ranks = 0, nodes = 0;  ///< nodes: the distinct hosts the log shows
  int step_nodes = 0;         ///< the node count its sweep step asked for; 0 outside a sweep
  double peak_busbw_gbps = 0;  ///< the highest busbw measured (never the fit's)
  std::optional<double> fit_peak_gbps;  ///< the fitted model's parameter: not a measurement
  std::optional<double> expected_busbw_gbps;
  std::vector<std::string> anomalies;  ///< each anomaly's detail
  std::string chart_path;              ///< as nccl.json names it
  std::string svg;                     ///< the chart, ready to inline; "" when it could not be read
  std::string svg_error;               ///< why the chart is missing
};

/// One entry of nccl.json's "scaling": a node count of one group that fell short (poor_scaling).
struct NcclScaling {
  std::string group, kind, detail;  ///< group: "all_reduce GPU (variant) in DIR"
  int nodes = 0;
  std::optional<double> measured_gbps, expected_gbps;
};

/// A sweep step that produced no run (it failed, timed out or was interrupted).
struct NcclFailedStep {
  std::string step, test, variant, error;
  int nodes = 0;
  int exit_code = -1;
};

struct NcclView {
  std::vector<NcclChart> runs;
  std::vector<NcclScaling> scaling;
  std::vector<NcclFailedStep> failed_steps;
};

/// The NCCL scaling table: busbw measured (the peak of each run) by node count, one row per
/// collective and variant, the node counts nccl.json's scaling flagged as falling short marked.
struct NcclScalingCell {
  std::optional<double> peak_busbw_gbps;  ///< the best run at this node count; nullopt: not run
  std::optional<double> expected_gbps;    ///< set when "scaling" flagged this node count
  std::string detail;                     ///< the flag's detail
};
struct NcclScalingRow {
  std::string collective, variant;
  std::vector<NcclScalingCell> cells;  ///< one per NcclScalingTable::node_counts
};
struct NcclScalingTable {
  std::vector<int> node_counts;  ///< ascending
  std::vector<NcclScalingRow> rows;
};
/// Pure: the runs grouped by (collective, variant), in first-seen order, each under the node count
/// its sweep step asked for (else the hosts its log shows).
NcclScalingTable nccl_scaling_table(const NcclView& v);

struct DrillStage {
  std::string stage, verdict;  ///< detected | drained | replaced | returned; ok | slow | never | pending | skipped
  bool reached = false;
  double at_ms = 0, lower_ms = 0;
  std::optional<double> threshold_ms;
  std::string how;
  bool awaited = true;  ///< the drill waited for this stage (returned only with --wait-return)
};

struct DrillNode {
  std::string node, error;
  std::string detector_by, detector_owner;  ///< "cmaxd", "rater"; empty when not recorded
  std::vector<DrillStage> stages;
};

struct DrillView {
  std::string drill_id, scenario, title, expect, scheduler;
  std::vector<DrillNode> nodes;
};

/// One month of one scope (a node, rack or site, or the total).
struct SlaCell {
  double availability_percent = 100;
  double down_gpu_hours = 0, excluded_gpu_hours = 0, credit = 0;
  bool below_target = false;
};

struct SlaRow {
  std::string name;
  std::vector<std::optional<SlaCell>> cells;  ///< per month; nullopt: no downtime or exclusion that month
  double worst = 100;                         ///< lowest availability over the months
};

struct SlaView {
  std::string contract, scope, currency;
  double target_percent = 0;
  std::vector<std::string> months;  ///< "2026-04"
  SlaRow total;
  std::vector<SlaRow> entities;     ///< worst first, at most kMaxSlaRows
  std::size_t entities_with_downtime = 0;  ///< down GPU-time in some month (exclusions alone do not count)
  std::size_t entities_excluded_only = 0;  ///< listed for excluded time (maintenance, drills) only
  std::vector<std::string> drills;         ///< "drill 1a2b on n1: START .. END", excluded from downtime
  std::vector<std::string> cancellations;  ///< "dfw1-r01 2026-06: availability 93.1% is below 95%"
  double credit_total = 0;
};

inline constexpr std::size_t kMaxIncidents = 200;
inline constexpr std::size_t kMaxSlaRows = 24;

/// Everything the page shows of one run directory.
/// campaign.json (cmax run): every stage of the plan, what became of it and why.
struct StageView {
  std::string id, kind, status, targets, reason, todo, error, log;
  bool run = false, disruptive = false;
  bool log_exists = false;  ///< `log` names a file in the run directory (set by load_run)
  double seconds = 0;
  int exit_code = -1;
  std::vector<std::string> documents;
};
struct CampaignView {
  std::string plan, origin, started_at, finished_at;
  bool interrupted = false;
  int resumes = 0;
  std::vector<StageView> stages;
};

struct RunReport {
  std::string dir, label, host;
  std::string href_base;  ///< the run directory relative to the page ("" or "runs/a/"), for links to its logs
  score::ScoreCard card;
  std::vector<audit::Finding> findings;
  std::optional<ClusterView> cluster;
  std::optional<ScanView> scan;
  std::optional<NcclView> nccl;
  std::optional<DrillView> drill;
  std::optional<loadgen::RunView> bench;
  std::vector<std::string> bench_warnings;  ///< bench.json's "warnings" (absent in older documents)
  std::optional<SlaView> sla;
  std::optional<CampaignView> campaign;
  std::vector<std::string> warnings;  ///< documents present but unusable, charts that could not be read
};

Result<ClusterView> parse_cluster_view(std::string_view text);
Result<ScanView> parse_scan_view(std::string_view text);
/// The runs and their charts' paths; the charts themselves are read by load_run.
Result<NcclView> parse_nccl_view(std::string_view text);
Result<DrillView> parse_drill_view(std::string_view text);
Result<SlaView> parse_sla_view(std::string_view text);
Result<CampaignView> parse_campaign_view(std::string_view text);

/// What a stage's exit code means for the command that stage runs (docs/exit-codes.md, docs/run.md):
/// "findings: a security check failed", "usage or environment", "interrupted". Pure.
std::string stage_exit_meaning(std::string_view kind, int exit_code);

/// What went wrong with a failed stage, for the reader: campaign.json's `error`, with a
/// "(last line: ...)" that only names a report or run directory (the child's closing lines, not
/// its reason) replaced by the log's last line that says something (`log_text`, may be empty). Pure.
std::string stage_failure_reason(std::string_view error, std::string_view log_text);

/// bench.json's "warnings": the strings of that array, nothing when it is absent or not an array.
std::vector<std::string> bench_warnings(const nlohmann::json& bench);
// The same from a parsed document whose schema was checked (score::read_evidence's).
Result<ClusterView> cluster_view(const nlohmann::json& doc);
Result<ScanView> scan_view(const nlohmann::json& doc);
Result<NcclView> nccl_view(const nlohmann::json& doc);
Result<DrillView> drill_view(const nlohmann::json& doc);
Result<SlaView> sla_view(const nlohmann::json& doc);

/// An SVG document made ready to sit inside HTML: the XML declaration and anything before <svg
/// dropped. Fails when the text holds no <svg ...>...</svg> or holds a script or a foreign reference.
Result<std::string> inline_svg(std::string_view svg);

/// Reads `dir` (results.json required, as cmax score) and scores it with `rubric`.
Result<RunReport> load_run(const std::string& dir, const score::Rubric& rubric);

}  // namespace cmax::html
