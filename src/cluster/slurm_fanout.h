#pragma once
// Runs `cmax collect --frame` on every chosen node through srun (one task per node), reads the
// nodes' framed documents as they arrive, and gives up on a node at the node timeout. Nodes held
// by a reservation are asked inside it, in an srun of their own beside the one for the other
// nodes. What srun says about a node on stderr (a launch that failed, a task that exited badly, a
// step Slurm queued instead of starting) settles that node at once, so a dead slurmd or a busy
// node costs one node, not the run.

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
  std::string reservation;                ///< only this reservation's nodes, inside it; empty: detect
  std::string user;                       ///< who runs srun (reservations' Users=); empty: this process's
  bool overlap = false;                   ///< inside an allocation (SLURM_JOB_ID set): --overlap
  std::string job_name = "cmax-collect";
  std::chrono::milliseconds node_timeout{60000};  ///< from launch to each node's answer
  std::chrono::milliseconds queue_wait{5000};     ///< an allocation not granted by then is "queued"
  std::chrono::milliseconds tool_timeout{10000};  ///< sinfo, scontrol, squeue, scancel
  bool dry_run = false;                   ///< plan and print the srun argv; run nothing
};

struct SlurmFanoutResult {
  SrunPlan plan;
  std::vector<NodeOutput> nodes;  ///< one per node asked or skipped, in sinfo order
  std::string log;                ///< each srun's argv, exit and stderr (clipped), for fanout.log
};

/// Plans with sinfo and scontrol's reservations and runs one srun per group, side by side.
/// Errors only when no plan can be made (a named slurm.conf that is missing, sinfo failing, no
/// node matching); every per-node problem is a NodeOutput.
Result<SlurmFanoutResult> slurm_fanout(const SlurmFanoutOptions& options, const NodeCallback& on_node);

}  // namespace cmax::cluster
