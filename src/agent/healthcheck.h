#pragma once
// `cmax check --slurm-healthcheck`: one quick verdict on this node for Slurm's HealthCheckProgram.
// Reads the kernel ring buffer once (non-blocking) and polls each probe once, through the same
// signal engine as cmaxd, and says which incidents reach the drain level. The decision of what to
// do with Slurm is a pure function of that verdict and SLURM_NODE_IS_HEALTHY, which slurmd (26.05.2
// and later) sets to "yes" or "no" for a registered node and leaves unset before the node
// registers: then calling scontrol can hang slurmd's start, so nothing is called.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "core/result.h"
#include "probes/probe.h"
#include "signals/catalog.h"
#include "signals/signal.h"

namespace cmax::agent {

struct HealthOptions {
  std::string node;
  std::string kmsg_path = "/dev/kmsg";  ///< "" skips the kernel log
  Origins act_on = Origins::any;        ///< as cmaxd: userspace lines count (a drill's, while it runs)
  signals::Action drain_at = signals::Action::drain;
  std::chrono::milliseconds budget{10000};  ///< for the whole check; Slurm kills it at HealthCheckTimeout
};

/// One incident at or above the drain level.
struct HealthProblem {
  signals::Kind kind = signals::Kind::xid;
  int code = -1;
  std::string device;
  signals::Action action = signals::Action::drain;
  std::uint64_t count = 0;
  std::string source;  ///< "kmsg" or "probe:<name>"
  std::string sample;  ///< the first line or finding text
  std::string drill;   ///< the drill that wrote it (signals/drill_marker.h); empty for a real fault
  /// "Xid 79 0000:06:00 (reboot_node)": how the problem reads in a reason or a log.
  std::string label() const;
};

struct HealthReport {
  std::vector<HealthProblem> problems;  ///< strongest action first
  std::uint64_t records = 0;            ///< kernel records read
  std::uint64_t drill_lines_ended = 0;  ///< lines of drills that had ended: skipped
  std::vector<std::string> notes;       ///< what could not be checked ("probe fs: ..."), for the log
  bool truncated = false;               ///< the budget ran out before the ring buffer's end
};

/// Runs the check. An error only when the kernel log cannot be opened; a probe that fails adds a
/// note and the check goes on.
Result<HealthReport> check_health(const HealthOptions& options, const signals::Catalog& catalog,
                                  std::vector<std::unique_ptr<probes::Probe>>& probes);

/// SLURM_NODE_IS_HEALTHY as slurmd sets it: "yes", "no", or absent/anything else (unset).
enum class SlurmHealth { unset, yes, no };
SlurmHealth parse_slurm_node_is_healthy(const char* value);

/// What to ask of Slurm after a check.
struct HealthAction {
  enum class Verb { none, drain, resume } verb = Verb::none;
  std::string why;  ///< for the log: why this, or why nothing
};

/// Problems on a node Slurm calls healthy: drain. No problems on a node Slurm calls unhealthy:
/// resume, but only a drain of the health check's own (the caller checks the reason). Unset:
/// nothing, whatever the verdict (the node may not have registered). Pure.
HealthAction decide_health_action(SlurmHealth slurm, bool healthy);

/// Every reason the health check sets starts with this (after sched::kReasonPrefix).
inline constexpr std::string_view kHealthReasonTag = "healthcheck: ";

}  // namespace cmax::agent
