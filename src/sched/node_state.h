#pragma once
// A node as the scheduler reports it: base state, flags, and the reason someone set.

#include <string>
#include <string_view>
#include <vector>

namespace cmax::sched {

/// One node's state, as Slurm prints it. A plain value; cheap to copy.
struct NodeState {
  std::string name;
  std::string state;  ///< verbatim, e.g. "IDLE+DRAIN", "DOWN+DRAIN+NOT_RESPONDING", "IDLE*"
  std::string base;   ///< "IDLE", "ALLOCATED", "MIXED", "DOWN", "ERROR", "FUTURE", "UNKNOWN"
  /// "DRAIN", "NOT_RESPONDING", "REBOOT_REQUESTED", ... in printed order.
  std::vector<std::string> flags;
  std::string reason;       ///< without Slurm's " [user@time]" suffix; empty when none is set
  std::string reason_user;  ///< who set the reason; empty when Slurm did not say
  std::string reason_time;  ///< when, as printed ("2026-12-02T18:00:00"); empty when not said
  std::vector<std::string> partitions;  ///< Slurm's Partitions=; empty when none or not said
  std::string boot_time;    ///< BootTime= as printed (slurmd's boot, from the node's uptime); "" not said

  /// True when `flag` ("DRAIN") is among the flags.
  bool has_flag(std::string_view flag) const;
  /// True when the DRAIN flag is set, whether or not jobs still run.
  bool drain_flag() const { return has_flag("DRAIN"); }
  /// DRAIN set and nothing runs any more (Slurm's "drained").
  bool drained() const;
  /// DRAIN set while jobs still run or complete (Slurm's "draining").
  bool draining() const { return drain_flag() && !drained(); }
  /// True when the controller cannot reach the node's slurmd ("*" in sinfo).
  bool not_responding() const { return has_flag("NOT_RESPONDING"); }
  /// True when the base state is DOWN.
  bool down() const { return base == "DOWN"; }
  /// Drained, draining or down: out of service, whoever took it out.
  bool out_of_service() const { return drain_flag() || down(); }
};

}  // namespace cmax::sched
