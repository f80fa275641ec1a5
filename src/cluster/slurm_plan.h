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
#include "sched/slurm_reservation.h"

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

struct SrunOptions {
  std::vector<std::string> collect_argv;   ///< what each task runs (absolute program path)
  std::string partition;                   ///< empty: srun's default
  std::string job_name = "cmax-collect";
  bool overlap = false;                    ///< inside an existing allocation: --overlap
  std::string reservation;                 ///< --reservation; empty: none
  std::chrono::milliseconds node_timeout{60000};
  /// How long srun may wait for its allocation (--immediate) before the step counts as queued.
  std::chrono::milliseconds queue_wait{5000};
};

/// The srun argv for `nodes`: one task per node, labelled output, no kill of the others when
/// one fails, a time limit from the node timeout, and (outside an allocation) --immediate from
/// the queue wait, so that a step Slurm queues ends by itself within seconds.
std::vector<std::string> srun_argv(const std::vector<std::string>& nodes, const SrunOptions& options);

/// One srun of a plan: the nodes it asks and the reservation it asks them in.
struct SrunGroup {
  std::string reservation;                 ///< empty: outside any reservation
  std::vector<std::string> nodes;          ///< in sinfo order
  std::vector<std::string> argv;           ///< srun ... -- collect argv
};

struct SrunPlan {
  std::vector<std::string> nodes;          ///< asked, in sinfo order
  std::vector<NodeOutput> skipped;         ///< not asked, with why
  std::vector<SrunGroup> groups;           ///< one srun each; they run side by side
  std::vector<std::string> notes;          ///< what the plan decided and why, for the run's log
};

/// What a plan is made from.
struct PlanInput {
  std::vector<SinfoNode> nodes;                  ///< from sinfo
  std::vector<sched::Reservation> reservations;  ///< from scontrol show reservation (active ones count)
  std::string reservation;                       ///< --reservation: only its nodes, asked inside it
  std::string user;                              ///< who runs srun, for reservations' Users= lists
};

/// The nodes to ask and the sruns that ask them. A node held by an active reservation is asked
/// inside it (one srun per reservation, beside the one for unreserved nodes), since an srun
/// without --reservation would queue behind it; a reservation whose Users= list leaves the user
/// out is reported as the reason its nodes are not asked. Inside an allocation (options.overlap)
/// reservations do not matter: one srun with --overlap. An explicit reservation that is not
/// active is an error.
Result<SrunPlan> plan_srun(const PlanInput& input, const SrunOptions& options);

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

/// "srun: job 2 queued and waiting for resources" -> "2": Slurm did not start the step at once.
std::optional<std::string> parse_srun_queued(std::string_view line);

/// "srun: error: Unable to allocate resources: Requested nodes are busy" (or "Required node not
/// available ...", after --immediate ran out or at once) -> Slurm's words: the nodes are held by
/// others or by a reservation now, which makes them queued, not failed. Other lines -> nullopt.
std::optional<std::string> parse_srun_unavailable(std::string_view line);

/// True for the line srun prints when its allocation was refused outright because a reservation
/// does not admit the user ("Access denied to requested reservation", "Problem using
/// reservation"): its nodes were not scheduled, not failed.
bool is_reservation_refusal(std::string_view line);

}  // namespace cmax::cluster
