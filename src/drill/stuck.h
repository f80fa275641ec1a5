#pragma once
// Why a drill's stage did not complete: what the drill reads off the node and the controller when
// the node is still out at the stage's bound (who set the drain reason and when, the state flags,
// the reservation, the health check's configuration, what the health-check program does, its last
// results in slurmd's log), and the loop it names when the only thing that can return the node
// needs the node healthy first. Pure: text and values in, a diagnosis out.
//
// The loops, from Slurm's code (src/slurmctld/ping_nodes.c run_health_check; slurmd.c runs the
// program once at start) and NHC's (helpers/node-mark-online resumes only a reason whose first word
// is "NHC:"):
//   - the health-check program resumes the nodes it drained, but slurmctld never runs it on a
//     drained idle node (HealthCheckNodeState NONDRAINED_IDLE, ALLOC/MIXED without IDLE or ANY,
//     START_ONLY, or no interval);
//   - the program runs, but exits first when its node is drained (it "needs the node healthy
//     before it can run");
//   - NHC is the resume path, but the node was drained for another reason (cmaxd's, an operator's):
//     NHC never resumes a reason it did not set.
// And for a replacement that never came: the watched reservation has no REPLACE_DOWN, or no idle
// node was left outside the reservations to swap in (the spares went to the other targets).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/parse/health_check.h"
#include "sched/node_state.h"

namespace cmax::drill {

/// `scontrol show config` ("Key = value" lines) as a map; keys as printed ("HealthCheckProgram").
std::map<std::string, std::string, std::less<>> parse_scontrol_config(std::string_view text);

/// What the controller says about remediation, and the program when it could be read here.
struct RemediationSetup {
  std::string health_check_program;     ///< "" none ("(null)")
  std::string health_check_node_state;  ///< as printed ("ANY", "NONDRAINED_IDLE,CYCLE"); "" unknown
  std::int64_t health_check_interval_s = -1;  ///< -1 unknown
  std::string return_to_service;        ///< "0", "1", "2"; "" unknown
  std::string reboot_program;           ///< "" none
  std::optional<audit::HealthScriptActions> program;  ///< the script's actions, when read here
  std::string program_note;  ///< why the program was not read ("not a script", "not on this host")
  bool config_read = false;  ///< scontrol show config answered
};

/// Builds the setup from `scontrol show config`'s map.
RemediationSetup remediation_setup(const std::map<std::string, std::string, std::less<>>& config);

/// slurmd's log lines about the health check ("health_check failed: rc:1 output:..."), newest
/// last, at most `max` of them. Pure.
std::vector<std::string> health_check_log_lines(std::string_view slurmd_log, std::size_t max = 3);

struct StuckEvidence {
  std::string stage;      ///< the awaited stage that was not reached: "drained", "replaced", "returned"
  sched::NodeState node;  ///< the target as last seen
  RemediationSetup setup;
  std::vector<std::string> health_check_log;  ///< health_check_log_lines of the node's slurmd
  std::vector<std::string> reservations;      ///< reservations holding the node ("maint (MAINT)")
  // The replacement, when a reservation was watched:
  std::string reservation;            ///< its name; "" none watched
  bool reservation_replaces = false;  ///< it has Flags=REPLACE_DOWN
  std::vector<std::string> spares_before;  ///< idle nodes outside every reservation before the drill
  /// Idle nodes outside every reservation now; nullopt when they could not be read.
  std::optional<std::vector<std::string>> spares_now;
};

struct StuckDiagnosis {
  std::string stage;
  std::vector<std::string> evidence;  ///< one line each, what was read
  std::string loop;                   ///< the loop, named; "" when none was found
  std::string next;                   ///< what would return the node
};

StuckDiagnosis diagnose_stuck(const StuckEvidence& e);

}  // namespace cmax::drill
