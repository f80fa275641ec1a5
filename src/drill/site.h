#pragma once
// The world a drill acts on: the scheduler it watches, the kernel logs it writes into, and the
// reads of Slurm's objects it makes before and after. drill::run_drill sequences the calls; the
// live site (drill/live_site.h) makes them for real, tests substitute a fake.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "drill/run_options.h"
#include "drill/scenario.h"
#include "drill/inject.h"
#include "drill/slurm_objects.h"
#include "drill/watch.h"
#include "sched/scheduler.h"
#include "sched/slurm_reservation.h"

namespace cmax::drill {

/// One injection: the drill's marker, then `steps`, on `node`; t = 0 at `t0`.
struct InjectRequest {
  const RunOptions& options;  ///< resolved: drill_id, scenario, until_unix, gpu, kmsg
  std::string node;
  const std::vector<Step>& steps;
  std::chrono::steady_clock::time_point t0;
  bool local = false;       ///< this machine's kernel log, else srun on the node
  std::string reservation;  ///< the active reservation holding the node, for srun; "" none
};

/// What a stuck report reads beside the node: the reservations and the spares.
struct StuckQuery {
  std::string stage;               ///< the awaited stage not reached
  sched::NodeState node;           ///< the target as last seen
  bool local = false;              ///< the node is this machine
  const std::vector<sched::Reservation>& reservations;
  std::string watched_reservation;  ///< "" none
  const std::vector<std::string>& spares_before;
};

/// Every call may be made from several targets' threads at once, except connect().
class Site {
 public:
  virtual ~Site() = default;
  /// This machine's short host name.
  virtual std::string here() = 0;
  /// The nodes of --rack: a Slurm switch or block, or the nodes a Kubernetes label selector names.
  virtual Result<std::vector<std::string>> rack_nodes(const std::string& rack) = 0;
  /// Opens the scheduler; scheduler() and poller() are valid after it succeeded.
  virtual Result<void> connect() = 0;
  virtual sched::Scheduler& scheduler() = 0;
  /// A poller of the scheduler; each target drilled takes its own through another().
  virtual const Poller& poller() = 0;
  /// Checks the watched reservation exists and can be read.
  virtual Result<void> check_reservation(const std::string& name) = 0;
  /// Every reservation as it is now (none on Kubernetes).
  virtual Result<std::vector<sched::Reservation>> reservations() = 0;
  virtual Result<Partition> partition(const std::string& name) = 0;
  virtual Result<Job> job(const std::string& id) = 0;
  /// Idle nodes in service outside every active reservation; nullopt when unreadable.
  virtual std::optional<std::vector<std::string>> idle_outside_reservations() = 0;
  /// Writes the marker and the fault lines; the fault lines written (not the marker). `devkmsg_note`
  /// gets what was done to printk_devkmsg around the writes.
  virtual Result<std::vector<Injected>> inject(const InjectRequest& request, std::string& devkmsg_note) = 0;
  /// Ends the drill in the node's kernel log; what happened ("end marker written" or why not).
  virtual std::string end_marker(const RunOptions& options, const std::string& node, bool local,
                                 const std::string& reservation) = 0;
  /// --reboot: waits (at most `bound` after `t0`) for the node to be drained, then requests its
  /// reboot; {"requested", "requested_ms", "t_unix", "command", "result"}.
  virtual nlohmann::json request_reboot(const RunOptions& options, const std::string& node,
                                        std::chrono::steady_clock::time_point t0, std::chrono::milliseconds bound) = 0;
  /// Why an awaited stage did not complete (drill/stuck.h), as the record shows it.
  virtual nlohmann::json stuck_report(const StuckQuery& query) = 0;
};

}  // namespace cmax::drill
