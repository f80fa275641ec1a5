#pragma once
// The controller's half of a cluster run: each node's answer (or why there is none) becomes a
// NodeResult with its findings judged here, against this run's floors; the nodes are compared
// with each other; the whole is one ClusterRun, written as cmax.cluster/1 and as an aggregate
// audit report (findings named "<check>@<node>") so the scorecard, SARIF and SQLite store of a
// single-node run serve a cluster run unchanged.

#include <optional>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "cluster/collect_doc.h"
#include "cluster/fanout.h"
#include "core/clock.h"
#include "core/result.h"

namespace cmax::cluster {

inline constexpr std::string_view kClusterSchema = "cmax.cluster/1";

struct NodeResult {
  NodeOutput output;               ///< status, detail, seconds, and the document as the node sent it
  std::optional<CollectDoc> doc;   ///< when the node answered with a readable document
  std::vector<audit::Finding> findings;  ///< the audit judged here + the node's active checks
  int exit_code = 0;               ///< the audit's exit code for this node alone
};

struct ClusterRun {
  std::string harness;  ///< "slurm", "kubernetes", "files"
  std::string started_at, finished_at;
  double seconds = 0;
  std::string floors_origin, floors_updated;
  std::vector<NodeResult> nodes;
  std::vector<audit::Finding> cluster_findings;  ///< cross-node consistency, and nodes that did not answer
  std::string fanout_log;                        ///< the scheduler's stderr (srun), clipped
};

/// Judges and compares. `outputs` is every node the fan-out planned; their payloads are parsed
/// here (a payload that does not parse makes the node failed, with why).
ClusterRun merge_nodes(std::vector<NodeOutput> outputs, const audit::Floors& floors, const core::Clock& clock);

/// 0 no fail; 1 a fail (including a node that did not answer); 2 a security fail.
int cluster_exit_code(const ClusterRun& run);

/// cmax.cluster/1 (docs/schemas/cluster.md): per node status, timings, summary counts, scan and
/// check summaries; the cluster findings in full. Two-space indented, deterministic.
std::string cluster_to_json(const ClusterRun& run, int exit_code);

/// Every node's findings (check ids suffixed "@node") and the cluster findings as one report.
audit::AuditReport aggregate_report(const ClusterRun& run);

/// The per-node table for the terminal.
std::string render_node_table(const ClusterRun& run, bool color);

/// Writes the run directory: the aggregate (results.json, cmax.db, security.sarif via
/// report::write_run_dir), cluster.json, nodes/<node>.json (each node's document as it sent it)
/// and fanout.log. Returns the directory.
/// Empty when at least one node was judged; else why none was, by status with one node's detail
/// each ("no node was evaluated: 6 not_scheduled (n1: a job on it is still ending ...)").
std::string why_no_node_evaluated(const ClusterRun& run);

Result<std::string> write_cluster_run_dir(const ClusterRun& run, int exit_code, const std::string& dir);

}  // namespace cmax::cluster
