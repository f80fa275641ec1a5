#pragma once
// The safety rules every Scheduler follows, as pure functions: cmax only undoes what it did, and
// finds out what to do from the node's state before it acts.

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sched/node_state.h"
#include "sched/scheduler.h"

namespace cmax::sched {

/// The longest reason cmax sets, prefix included.
inline constexpr std::size_t kMaxReasonBytes = 512;

/// True when `reason` starts with kReasonPrefix.
bool is_cmax_reason(std::string_view reason);

/// `reason` with kReasonPrefix in front unless it has it already; an error when it is empty, longer
/// than kMaxReasonBytes, or holds control characters.
Result<std::string> cmax_reason(std::string_view reason);

/// Ok when `node` names exactly one node (letters, digits, '.', '_', '-'): no hostlist, comma or
/// '=' that would make scontrol act on other nodes.
Result<void> check_node_name(std::string_view node);

/// True when the node is drained or down for a reason cmax did not set (an operator's, Slurm's
/// own).
bool held_by_others(const NodeState& s);

/// True when cmax holds the node out of service: DRAIN set or DOWN, with a reason cmax set.
bool held_by_cmax(const NodeState& s);

/// Counts, among `nodes`, those sharing a partition with `node` (every node when `node` is in no
/// partition or not listed) and those of them cmax holds. Pure; for Scheduler::held_by_cmax.
PoolCount pool_count(const std::vector<NodeState>& nodes, std::string_view node);

/// Whether to act on a node, and when not, why.
struct Decision {
  bool act = false;
  std::string note;  ///< why nothing needs doing; empty when act
};

/// Drain unless the node is already drained or draining, or held for someone else's reason.
Decision decide_drain(const NodeState& s);

/// Resume a drained or down node; an error when it is held by others and `force` is Force::kNo.
Result<Decision> decide_resume(const NodeState& s, Force force);

/// Reboot unless one is pending; an error when the node is held by others (nextstate=RESUME would
/// return their node to service).
Result<Decision> decide_reboot(const NodeState& s);

}  // namespace cmax::sched
