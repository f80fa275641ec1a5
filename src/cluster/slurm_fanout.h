#pragma once
// Runs `cmax collect --frame` on every chosen node through one srun (one task per node), reads the
// nodes' framed documents as they arrive, and gives up on a node at the node timeout. What srun
// says about a node on stderr (a launch that failed, a task that exited badly) settles that node at
// once, so a dead slurmd costs one node, not the run.

#include <chrono>
#include <string>
#include <vector>

#include "cluster/fanout.h"
#include "cluster/slurm_plan.h"
#include "core/result.h"

namespace cmax::cluster {

struct SlurmFanoutOptions {
  std::vector<std::string> collect_argv;  ///< absolute cmax path, "collect", "--frame", ...
  std::string partition;                  ///< -p for sinfo and srun; empty: all / default
  std::string nodelist;                   ///< a Slurm hostlist ("n[1-4]"); empty: every node
  std::string slurm_conf;                 ///< SLURM_CONF for the client tools; empty: inherited
  bool overlap = false;                   ///< inside an allocation (SLURM_JOB_ID set): --overlap
  std::string job_name = "cmax-collect";
  std::chrono::milliseconds node_timeout{60000};  ///< from launch to each node's answer
  std::chrono::milliseconds tool_timeout{10000};  ///< sinfo, scancel
  bool dry_run = false;                   ///< plan and print the srun argv; run nothing
};

struct SlurmFanoutResult {
  SrunPlan plan;
  std::vector<NodeOutput> nodes;  ///< one per node asked or skipped, in plan order
  std::string srun_stderr;        ///< clipped, for the run directory
  int srun_exit = -1;             ///< -1: killed or not run
};

/// Plans with sinfo and runs srun. Errors only when no plan can be made (sinfo fails, no node
/// matches); every per-node problem is a NodeOutput.
Result<SlurmFanoutResult> slurm_fanout(const SlurmFanoutOptions& options, const NodeCallback& on_node);

}  // namespace cmax::cluster
