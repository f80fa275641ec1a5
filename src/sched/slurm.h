#pragma once
// Scheduler on Slurm through `scontrol`, spawned from argv (no shell), a deadline on every call.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sched/scheduler.h"

namespace cmax::sched {

/// How SlurmScheduler reaches Slurm.
struct SlurmOptions {
  std::string conf_path;                    ///< passed as SLURM_CONF when set; else Slurm's default
  std::chrono::milliseconds timeout{5000};  ///< per scontrol call
  /// Mutating calls still read the node's state, then report their argv without running it.
  bool dry_run = false;
  std::string scontrol = "scontrol";  ///< program name (looked up on PATH) or path
  /// The slurm.conf license whose count is the fleet breaker's exact limit (Licenses=NAME:L): each
  /// held node takes one unit through a license-only reservation cmax_hold_NODE, and slurmctld
  /// refuses a reservation past L. Empty: read-then-act only.
  std::string breaker_license = "cmax_breaker";
  /// How long a claim counts before its node shows as held (the drain is under way, or failed).
  std::chrono::seconds claim_ttl{120};
};

/// argv of `scontrol create reservation ReservationName=cmax_hold_NODE Licenses=LICENSE:1
/// StartTime=now Duration=UNLIMITED Users=root Flags=ANY_NODES NodeCnt=0`: a license-only
/// reservation (no node is reserved) holding one unit of the breaker's license.
std::vector<std::string> claim_argv(const SlurmOptions& options, std::string_view node);
/// "cmax_hold_NODE": the name of a node's breaker claim.
std::string claim_name(std::string_view node);

/// argv of `scontrol update NodeName=node State=DRAIN Reason=reason`.
std::vector<std::string> drain_argv(const SlurmOptions& options, std::string_view node,
                                    std::string_view reason);
/// argv of `scontrol update NodeName=node State=RESUME`.
std::vector<std::string> resume_argv(const SlurmOptions& options, std::string_view node);
/// argv of `scontrol reboot ASAP nextstate=RESUME reason=reason node`.
std::vector<std::string> reboot_argv(const SlurmOptions& options, std::string_view node,
                                     std::string_view reason);

/// Runs `argv` (argv[0] is options.scontrol) with SLURM_CONF from options and Slurm's ISO time
/// format, bounded by options.timeout: its standard output, or an error that says whether scontrol
/// timed out (is slurmctld up?), died, failed (with its message) or printed more than `max_bytes`.
Result<std::string> run_scontrol(const SlurmOptions& options, std::vector<std::string> argv,
                                 std::size_t max_bytes = 64u << 10);

/// The slurm.conf the client tools will read: `flag` when given, else $SLURM_CONF, else empty
/// (Slurm's default, /etc/slurm/slurm.conf or a configless controller). A path that was named but
/// is not a readable file is an error saying so, at once: Slurm's own tools would retry it for a
/// minute and then blame the controller.
Result<std::string> effective_slurm_conf(std::string_view flag);

/// Scheduler over Slurm's scontrol. Each call runs scontrol once or twice (state, then action),
/// each bounded by options.timeout. Not thread-safe; cheap to construct.
class SlurmScheduler final : public Scheduler {
 public:
  explicit SlurmScheduler(SlurmOptions options);

  Result<NodeState> node_state(std::string_view node) override;
  Result<Action> drain(std::string_view node, std::string_view reason) override;
  Result<Action> resume(std::string_view node, Force force) override;
  Result<Action> reboot(std::string_view node, std::string_view reason) override;
  /// Runs `scontrol -o show node` once for every node and counts the partitions `node` is in. The
  /// node's own state from that read stands in for the state read of the next drain() or reboot()
  /// of the same node, once, if it comes within kReuseWindow: the fleet breaker then costs no
  /// extra scontrol call on the path to a drain.
  Result<PoolCount> held_by_cmax(std::string_view node) override;
  static constexpr std::chrono::milliseconds kReuseWindow{1000};
  /// Through slurmctld's own serialisation: a license-only reservation cmax_hold_NODE holding one
  /// unit of options.breaker_license; slurmctld creates it only while units are left ("Invalid
  /// license specification" past the total). A full license first has its stale claims deleted
  /// (node no longer held by cmax, claim older than claim_ttl) and is tried once more. A cluster
  /// without the license decides by the read alone, not exact, saying how to configure it (and
  /// is not asked again for 10 minutes).
  Result<Claim> claim_hold(std::string_view node, const PoolCount& pool, int limit) override;
  /// Deletes cmax_hold_NODE (none: nothing to do).
  Result<void> release_hold(std::string_view node) override;

  const SlurmOptions& options() const { return options_; }

 private:
  Result<std::string> scontrol(std::vector<std::string> argv, std::size_t max_bytes = 64u << 10);
  Result<NodeState> read_state(std::string_view node);
  // read_state() for a mutating call: the state held_by_cmax() just read, else a fresh read.
  Result<NodeState> state_for_action(std::string_view node);
  Result<Action> act(std::vector<std::string> argv);

  SlurmOptions options_;
  struct Remembered {
    NodeState state;
    std::chrono::steady_clock::time_point at;
  };
  std::optional<Remembered> remembered_;  ///< from the last held_by_cmax(); used once
  std::vector<std::string> held_all_;     ///< every node cmax held at the last held_by_cmax() (stale claims)
  std::optional<std::chrono::steady_clock::time_point> no_license_since_;  ///< the license was missing then
};

}  // namespace cmax::sched
