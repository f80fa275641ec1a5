#pragma once
// cpu.stall's pure half: what the pinned sleepers of each NUMA node saw, judged into a result.
// check_cpu_stall (stall.cpp) gathers the observations; judge_stall decides, so the fail path (a
// node whose threads never ran) is tested with synthetic observations.

#include <chrono>
#include <span>
#include <string>
#include <vector>

#include "health/judge.h"
#include "health/result.h"

namespace cmax::health {

/// What one thread pinned to one CPU saw while it slept 1 ms at a time.
struct StallObservation {
  int cpu = -1;
  std::string
      start_error;       ///< the thread could not be created (CPU outside the cpuset): not judged
  bool started = false;  ///< it ran at least once on its CPU
  std::vector<double> lateness_ms;  ///< per sleep: how much later than 1 ms it woke
  /// When it had not returned by the time the parent stopped waiting: how long since it last made
  /// progress (a wake-up that never came), in ms; 0 when it returned.
  double stuck_ms = 0;
};

/// The threads of one NUMA node.
struct NodeObservations {
  int node = 0;
  std::vector<StallObservation> threads;  ///< one per CPU of the node; empty for memory-only nodes
};

/// Judges every node: a node with a CPU whose pinned thread never ran within `watched` fails ("no
/// CPU of NUMA node N ran a pinned thread for X ms: ..."); otherwise its worst wake-up lateness
/// (including a thread stuck at the end) is judged against `max_wakeup` (cpu.stall.max_wakeup_ms).
/// Fills id, outcome, target, summary, reason and measurements (numa<N>.p99_wakeup_ms,
/// numa<N>.max_wakeup_ms); not duration, title or category. Pure.
CheckResult judge_stall(std::span<const NodeObservations> nodes, std::chrono::milliseconds watched,
                        const Bounds& max_wakeup);

}  // namespace cmax::health
