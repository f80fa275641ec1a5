#pragma once
// Pieces of a drill's record (cmax.drill/1, docs/drills.md) computed from what it observed. Pure:
// no clock, no I/O.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drill/timeline.h"
#include "sched/node_state.h"
#include "sched/slurm_reservation.h"

namespace cmax::drill {

/// {"state": ..., "reason": ...}: a node as the record shows it before and after.
nlohmann::json state_json(const sched::NodeState& s);

/// Who took the node out, from the reason the first poll that saw it out of service (and changed
/// from `before`) read: {"by", "owner", "reason", ...}; "by": "none" when no poll did. A cmax
/// detector is the rater's unless `provider_runs_cmax`.
nlohmann::json detector_of(const std::vector<Observation>& seen, const sched::NodeState& before,
                           bool provider_runs_cmax);

/// The active reservation holding `node`, or "": an srun to a reserved node must name it, or it
/// queues behind it.
std::string reservation_of(const std::vector<sched::Reservation>& all, const std::string& node);

/// The numbers a rater quotes for a drill of several nodes at once, from the record's "nodes":
/// per awaited stage how many reached it, and when (ms after the first injection) the first and
/// the last did; which were not reached; the spares there were before.
nlohmann::json fleet_summary(const nlohmann::json& nodes, const std::vector<std::string>& spares_before);

}  // namespace cmax::drill
