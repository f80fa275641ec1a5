#pragma once
// Pure parsers for what Slurm's client tools print about nodes. No I/O; string_view in, value out.

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sched/node_state.h"

namespace cmax::sched {

/// A State= value split into its base state and flags.
struct SlurmState {
  std::string base;  ///< "IDLE", "ALLOCATED", "MIXED", "DOWN", "ERROR", "FUTURE", "UNKNOWN"
  std::vector<std::string> flags;  ///< "DRAIN", "NOT_RESPONDING", ... in printed order
};

/// Parses "IDLE+DRAIN", "DOWN+DRAIN+NOT_RESPONDING", or sinfo's suffixed "IDLE*" (a trailing "*"
/// becomes NOT_RESPONDING, "@" REBOOT_REQUESTED, "^" REBOOT_ISSUED, ...). Upper case only.
Result<SlurmState> parse_slurm_state(std::string_view state);

/// Parses the one line `scontrol -o show node NAME` prints (Key=Value pairs; values such as OS= may
/// hold spaces; Reason= holds free text followed by " [user@time]"). A trailing newline is fine;
/// "Node x not found", several nodes, a missing NodeName= or State=, or an unknown state is an
/// error.
Result<NodeState> parse_scontrol_node(std::string_view text);

/// Parses `scontrol -o show node` for every node: one line per node, each as above. No nodes is an
/// empty list; any bad line is an error naming its number.
Result<std::vector<NodeState>> parse_scontrol_nodes(std::string_view text);

}  // namespace cmax::sched
