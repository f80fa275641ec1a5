#pragma once
// The checks a drill makes before it injects anything: a drill changes nothing when it cannot run.
// Internal to drill/run.cpp.

#include <vector>

#include "core/result.h"
#include "drill/run.h"
#include "drill/site.h"

namespace cmax::drill {

/// The request checked and resolved into a plan: the scenario and its lines, the targets (the
/// rack's when --rack), where each is injected, and the flags that do not go together.
Result<Plan> check_request(const RunOptions& options, Site& site);

/// What the drill read of the cluster before injecting.
struct ClusterBefore {
  std::vector<sched::NodeState> before;          ///< per target
  std::vector<sched::Reservation> reservations;  ///< every reservation (none on Kubernetes)
};

/// Each target in service, and the watched reservation, partition and job readable (the job
/// running on every target). Errors end in "nothing was injected".
Result<ClusterBefore> check_before_injecting(const Plan& plan, Site& site);

}  // namespace cmax::drill
