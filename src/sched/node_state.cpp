#include "sched/node_state.h"

#include <algorithm>

namespace cmax::sched {

bool NodeState::has_flag(std::string_view flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool NodeState::drained() const {
  // Slurm's own rule (node_state_string): DRAIN on a node that is allocated, mixed or completing is
  // "draining"; on any other base state it is "drained".
  return drain_flag() && base != "ALLOCATED" && base != "MIXED" && !has_flag("COMPLETING");
}

}  // namespace cmax::sched
