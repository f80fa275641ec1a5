#pragma once
// The Slurm side of a cluster run, pure: which nodes to ask (from sinfo), the srun argv that asks
// them, and what srun's error lines say about a node. slurm_fanout.h does the I/O.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/fanout.h"
#include "core/result.h"

namespace cmax::cluster {

/// One node as `sinfo -h -N -o %N|%T|%E` lists it.
struct SinfoNode {
  std::string name;
  std::string state;   ///< "idle", "mixed", "idle*", "drained", "down*"
  std::string reason;  ///< %E, "none" when there is none
};

/// Parses sinfo's lines; a node listed once per partition appears once. Malformed lines are an
/// error naming the line.
Result<std::vector<SinfoNode>> parse_sinfo_nodes(std::string_view text);

/// Whether srun can start a task on the node now. Inside an allocation (`overlap`), nodes the
/// job holds are allocated by definition and are asked; outside one, a node busy with other
/// jobs is not (srun would wait for it). nullopt: ask it; else the NodeOutput saying why not.
std::optional<NodeOutput> not_schedulable(const SinfoNode& node, bool overlap);

struct SrunPlan {
  std::vector<std::string> nodes;          ///< asked, in sinfo order
  std::vector<NodeOutput> skipped;         ///< not asked, with why
  std::vector<std::string> argv;           ///< srun ... -- collect argv
};

struct SrunOptions {
  std::vector<std::string> collect_argv;   ///< what each task runs (absolute program path)
  std::string partition;                   ///< empty: srun's default
  std::string job_name = "cmax-collect";
  bool overlap = false;                    ///< inside an existing allocation: --overlap
  std::chrono::milliseconds node_timeout{60000};
};

/// The srun argv for `nodes`: one task per node, labelled output, no kill of the others when
/// one fails, a time limit from the node timeout.
std::vector<std::string> srun_argv(const std::vector<std::string>& nodes, const SrunOptions& options);

/// What one line of srun's stderr says about a node.
struct SrunEvent {
  std::string node;
  NodeStatus status = NodeStatus::failed;  ///< unreachable (launch failed) or failed (task ended badly)
  std::string detail;                      ///< srun's own words
};
/// "srun: error: Task launch for StepId=3.0 failed on node n3: Communication connection failure"
/// -> n3 unreachable; "srun: error: n3: task 2: Exited with exit code 1" -> n3 failed. Other lines
/// -> nullopt.
std::optional<SrunEvent> parse_srun_error(std::string_view line);

/// True for srun errors that end the whole step ("Unable to allocate resources", "Unable to
/// create step"): every node not yet heard from gets this line as its reason.
bool is_fatal_srun_error(std::string_view line);

}  // namespace cmax::cluster
