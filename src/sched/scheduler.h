#pragma once
// What the node agent asks of a workload scheduler: read a node's state, drain it, resume it,
// reboot it. Implementations follow the rules in sched/policy.h: cmax only undoes what it did, and
// every mutating call is idempotent and has a dry run.

#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sched/node_state.h"

namespace cmax::sched {

/// Every reason cmax sets starts with this; a reason without it belongs to someone else.
inline constexpr std::string_view kReasonPrefix = "cmax: ";

/// What a mutating call did, or under dry run would do.
struct Action {
  bool changed = false;  ///< the scheduler was (dry run: would be) asked to change the node
  bool dry_run = false;  ///< true when nothing was run
  /// The command run, or under dry run the one that would run; empty when none was needed.
  std::vector<std::string> argv;
  std::string note;  ///< why nothing was needed ("already drained: cmax: Xid 79"); empty otherwise
  /// How many times the change was sent: more than 1 when the node changed under it and the
  /// scheduler read it again (Kubernetes' conflict retries); argv is the last try's.
  int attempts = 1;
};

/// How many nodes cmax holds out of service now in the pool `node` belongs to (Slurm: the nodes
/// sharing a partition with it; Kubernetes: the nodes the configured label selector picks, or
/// all). What the fleet-wide circuit breaker reads before a drain.
struct PoolCount {
  std::string pool;  ///< "partition gpu", "nodes matching pool=a100": for messages
  int held = 0;      ///< drained, draining or down with a reason that starts with kReasonPrefix
  int total = 0;     ///< nodes in the pool
  bool node_held = false;  ///< the node asked about is itself among the held
  std::vector<std::string> held_nodes;  ///< their names, where the scheduler read them (Kubernetes)
};

/// A fleet-breaker slot taken (or refused) through the control plane's own concurrency control,
/// so that agents faulting in the same instant cannot all read "0 held" and all drain.
struct Claim {
  bool granted = true;
  bool exact = false;  ///< decided under the control plane's serialisation; false: read-then-act
  std::string why;     ///< refused: why (the count, the limit, who claimed); not exact: why not
};

/// Whether resume() may undo a drain that cmax did not set.
enum class Force : bool { kNo = false, kYes = true };

/// A workload scheduler's node controls. Calls block, each bounded by the implementation's timeout.
/// Errors name the action and the node: "drain n1: scontrol exited 1: ...". Not thread-safe.
class Scheduler {
 public:
  virtual ~Scheduler() = default;

  /// The node's current state and reason.
  virtual Result<NodeState> node_state(std::string_view node) = 0;
  /// Drains `node` (running jobs finish) with `reason`, prefixed with kReasonPrefix when it lacks
  /// it. Idempotent: a node already drained or draining is left as is (changed == false).
  virtual Result<Action> drain(std::string_view node, std::string_view reason) = 0;
  /// Returns a drained or down node to service. Refuses, with an error, a node whose reason cmax
  /// did not set unless `force` is Force::kYes. A node in service is left as is (changed == false).
  virtual Result<Action> resume(std::string_view node, Force force) = 0;
  /// Reboots `node` once its jobs end and returns it to service after; `reason` as for drain().
  /// Refuses a node held (drained or down) for someone else's reason. A reboot already pending is
  /// left as is (changed == false).
  virtual Result<Action> reboot(std::string_view node, std::string_view reason) = 0;
  /// The nodes cmax holds now in `node`'s pool; `node` itself counts when it is held.
  virtual Result<PoolCount> held_by_cmax(std::string_view node) = 0;
  /// Takes one of `limit` slots of the pool for `node` before a drain, counting `pool`'s held
  /// nodes and the slots other agents claimed and have not yet shown as held. The default (no
  /// shared object to serialise on) grants it, not exact: the read in held_by_cmax decided.
  virtual Result<Claim> claim_hold(std::string_view node, const PoolCount& pool, int limit) {
    (void)node, (void)pool, (void)limit;
    return Claim{};
  }
  /// Gives back the slot claim_hold() took for `node`, once it is back in service. The default has
  /// none to give back (Kubernetes' slots go stale by themselves).
  virtual Result<void> release_hold(std::string_view node) {
    (void)node;
    return ok();
  }
  /// True when the control plane pushes node changes (wait_in_service watches); false: a caller
  /// that must see a resume polls node_state().
  virtual bool watches_resume() const { return false; }
  /// Blocks until `node` is back in service (neither drained nor down) and returns its state then;
  /// nullopt when `stop` was requested first. Unlike the other calls it may run on a thread of its
  /// own beside them. The default has no push channel and says so.
  virtual Result<std::optional<NodeState>> wait_in_service(std::string_view node, std::stop_token stop) {
    (void)stop;
    return fail("watch {}: this scheduler has no watch; poll its state", node);
  }
};

}  // namespace cmax::sched
