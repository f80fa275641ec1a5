#pragma once
// Slurm's health-check settings and program, read for one question: can a node the health check
// drained ever come back on its own? Pure.
//
// slurmctld runs HealthCheckProgram (through each slurmd) every HealthCheckInterval on the nodes
// HealthCheckNodeState selects (src/slurmctld/ping_nodes.c, run_health_check); slurmd also runs it
// once when it starts, before it registers, whatever the node's state. A node that is DRAINED (the
// DRAIN flag, no job left) has no CPU in use, so it is checked only under IDLE or ANY:
// NONDRAINED_IDLE skips it by design (the only place the DRAIN flag is tested), and ALLOC or MIXED
// alone never see an idle node. Slurm ignores the program's exit code: what drains or resumes the
// node is the program itself (NHC's node-mark-offline / node-mark-online, an scontrol line).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::audit {

/// HealthCheckNodeState as slurmctld reads it (src/common/read_config.c, _health_node_state): a
/// comma list of ALLOC, ANY, CYCLE, IDLE, MIXED, NONDRAINED_IDLE, START_ONLY and (26.05) REBOOT_ONLY,
/// any case, ORed together. No state word (unset, or CYCLE alone) means ANY; a word Slurm does not
/// know is logged and ignored, as slurmctld does.
struct HealthCheckStates {
  bool alloc = false, mixed = false, idle = false, nondrained_idle = false, cycle = false;
  bool start_only = false;   ///< only when slurmd starts: no periodic run
  bool reboot_only = false;  ///< only after a reboot (26.05): no periodic run
  std::vector<std::string> ignored;  ///< words Slurm does not know, as written
  /// Whether the periodic run checks a DRAINED node (idle, DRAIN flag).
  bool checks_drained_idle() const { return idle && !start_only && !reboot_only; }
  /// The value as slurm.conf would write it, for messages ("NONDRAINED_IDLE,CYCLE").
  std::string describe() const;
};

/// Parses a HealthCheckNodeState value ("" = unset = ANY). Pure; never fails.
HealthCheckStates parse_health_check_states(std::string_view value);

/// What a health-check script does to the node, from its text: whether it drains (or downs) it
/// and whether it resumes it. Recognised: `scontrol update ... State=DRAIN|DOWN|FAIL` and
/// `State=RESUME|IDLE|UNDRAIN`, NHC's helpers (node-mark-offline / node-mark-online, and their
/// $OFFLINE_NODE / $ONLINE_NODE variables), in lines that are not comments.
struct HealthScriptActions {
  bool drains = false, resumes = false;
  int drain_line = 0, resume_line = 0;  ///< 1-based; 0 when none
  /// The script leaves early when its node is drained: a line that tests for a drain state
  /// ("*DRAIN*", `grep -q drain`, sinfo's `drng`) and exits or returns on it, or is followed by an
  /// exit within two lines, before its resume line. Then the resume is never reached on the only
  /// node state it is for: the health check "needs the node healthy before it can run".
  bool skips_drained = false;
  int skip_line = 0;
};

/// nullopt when `text` is not a script (a binary: NUL bytes, or no "#!" first line).
std::optional<HealthScriptActions> classify_health_script(std::string_view text);

}  // namespace cmax::audit
