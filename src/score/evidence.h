#pragma once
// The evidence in a run directory: results.json's findings (required) and whichever stage
// documents are there: cluster.json, drill.json, nccl.json, bench.json, sla.json, scan.json,
// check-active.json, attestations.json (docs/score.md). Each metric the rubric can name is either
// found, with where it came from, or missing.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/model.h"
#include "core/result.h"

namespace cmax::score {

/// A number a rubric item can be scored from, and the document it is read from.
struct MetricSpec {
  std::string_view name;
  std::string_view document;  ///< the file in the run directory
  std::string_view meaning;
};

inline constexpr MetricSpec kMetrics[] = {
    {"cluster.nodes_answered", "cluster.json", "fraction of the nodes whose status is ok"},
    {"scan.actionable_per_node", "cluster.json or scan.json",
     "unresolved kernel-log incidents that need restart_app or stronger, per node scanned"},
    {"drill.detect_s", "drill.json", "worst seconds from injection to detected over the drilled nodes"},
    {"drill.drain_s", "drill.json", "worst seconds from injection to drained"},
    {"drill.replace_s", "drill.json", "worst seconds from injection to a replacement in service"},
    {"nccl.pass_fraction", "nccl.json", "(pass + 0.5 x warn) / runs with a verdict"},
    {"nccl.reference_ratio", "nccl.json", "worst peak busbw / the reference's expected busbw"},
    {"endpoint.cache_hit_rate", "bench.json", "overall.cache_hit_rate: cached / prompt tokens"},
    {"endpoint.cache_hit_of_achievable", "bench.json",
     "overall.cache_hit_rate / workload.theoretical_hit_rate: the share of what the prompts sent allow"},
    {"endpoint.cost_ratio", "bench.json", "cost.ratio_to_reference: the bill over the bill at the reference hit rate"},
    {"endpoint.success_rate", "bench.json", "overall.succeeded / overall.requests"},
    {"sla.availability_percent", "sla.json", "100 x (1 - down / (GPU-hours - excluded)) over every month"},
    {"sla.cancellation_rights", "sla.json", "summary.cancellation_rights"},
};

/// The spec of a metric name, or nullptr.
const MetricSpec* find_metric(std::string_view name);

struct Metric {
  double value = 0;     ///< +inf: the event never happened within the stage's timeout
  std::string source;   ///< "drill.json nodes[].stages[detected].at_ms (worst of 2 nodes)"
};

struct Evidence {
  std::string dir;
  std::string label;  ///< the directory's base name
  std::string host;   ///< results.json's host
  std::vector<audit::Finding> findings;
  std::map<std::string, Metric> metrics;
  std::vector<std::string> documents;  ///< the files read, in reading order
  std::vector<std::string> warnings;   ///< documents present but unreadable: their metrics are missing
  /// Why a document that is present gave no value for a metric, by metric name: "nccl.json: every
  /// step failed: srun: error: ...". The score says this instead of "run the stage" (issue 35).
  std::map<std::string, std::string> gaps;
};

/// The most a measured prefix-cache hit rate may exceed what the prompts sent allow before the
/// endpoint's cache is taken to have been warm before the run (rounding and block edges stay under
/// it): bench.json's cache_hit_above_achievable, and the score's check of older documents.
inline constexpr double kHitAboveAchievableTolerance = 0.02;

/// The stage documents read_evidence parsed, by file name ("sla.json"), for a caller that shows
/// them as well (cmax report), so that none is parsed twice.
using ParsedDocuments = std::map<std::string, nlohmann::json, std::less<>>;

/// Reads `dir`. Fails (a usage error) only when results.json is missing or unreadable. With
/// `keep`, every stage document that parsed with its schema is moved into it.
Result<Evidence> read_evidence(const std::string& dir, ParsedDocuments* keep = nullptr);

// The document readers, pure: each adds what it finds to `ev`, or returns why the text is unusable.
Result<void> add_cluster_doc(std::string_view text, Evidence& ev);
Result<void> add_drill_doc(std::string_view text, Evidence& ev);
Result<void> add_nccl_doc(std::string_view text, Evidence& ev);
Result<void> add_bench_doc(std::string_view text, Evidence& ev);
Result<void> add_sla_doc(std::string_view text, Evidence& ev);
Result<void> add_scan_doc(std::string_view text, Evidence& ev);
/// cmax.check.active/1: each result becomes a finding "check.<id>[@target]" (skipped when the
/// findings already hold active checks, as a cluster run's do).
Result<void> add_check_active_doc(std::string_view text, Evidence& ev);
/// cmax.attestations/1: reviewed documents (SOC2 report, NCP status) as findings "attest.<id>".
Result<void> add_attestations_doc(std::string_view text, Evidence& ev);
// The same from a parsed document whose schema was checked.
Result<void> add_cluster_json(nlohmann::json& doc, Evidence& ev);
Result<void> add_drill_json(nlohmann::json& doc, Evidence& ev);
Result<void> add_nccl_json(nlohmann::json& doc, Evidence& ev);
Result<void> add_bench_json(nlohmann::json& doc, Evidence& ev);
Result<void> add_sla_json(nlohmann::json& doc, Evidence& ev);
Result<void> add_scan_json(nlohmann::json& doc, Evidence& ev);
Result<void> add_check_active_json(nlohmann::json& doc, Evidence& ev);
Result<void> add_attestations_json(nlohmann::json& doc, Evidence& ev);

}  // namespace cmax::score
