#pragma once
// The Slurm part of cmax run's facts (campaign/decide.h), from what sinfo and `scontrol show
// reservation` printed. Pure: the caller runs the commands and names the user.

#include <string>
#include <string_view>
#include <vector>

#include "campaign/decide.h"
#include "sched/slurm_reservation.h"

namespace cmax::campaign {

/// Adds the nodes of `sinfo -h -N -o "%N %T %G"` to facts.nodes (once each) and the idle or
/// reserved ones to facts.idle; sets facts.gpu when a node's Gres names a gpu. Pure.
void add_sinfo_nodes(Facts& facts, std::string_view sinfo_out);

/// The trial's own nodes: the idle nodes of the ACTIVE, non-MAINT reservations `user` may use,
/// into facts.trial_nodes / trial_reservations (most idle nodes first) / trial_nccl_nodes. Pure.
void note_trial_nodes(Facts& facts, const std::vector<sched::Reservation>& list, std::string_view user);

/// With facts.allow_disruptive: the drill's target and spares from an ACTIVE REPLACE_DOWN
/// reservation `user` may use (the one named by facts.reservation, if any), where the user named
/// neither; returns a note for the user for each choice made. Pure.
std::vector<std::string> note_drill_target(Facts& facts, const std::vector<sched::Reservation>& list,
                                           std::string_view user);

}  // namespace cmax::campaign
