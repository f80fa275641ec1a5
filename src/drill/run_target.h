#pragma once
// One target's drill inside run_drill: baseline, injection, watch, stages, and (when a stage never
// came) why. Internal to drill/run.cpp.

#include <chrono>
#include <cstddef>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drill/run.h"
#include "drill/site.h"
#include "drill/timeline.h"

namespace cmax::drill {

/// What every target of one drill shares. Injections are serialized (printk_devkmsg is raised and
/// put back around each) and so are writes to the audit record.
struct DrillContext {
  const Plan& plan;
  Site& site;
  Progress& progress;
  const std::vector<sched::NodeState>& before;        ///< per target, before the drill
  const std::vector<sched::Reservation>& reservations;  ///< every reservation before the drill
  const std::vector<std::string>& spares_before;
  StageThresholds thresholds;
  StageTimeouts timeouts;
  std::ostream& audit_log;  ///< injected.jsonl
  std::chrono::steady_clock::time_point drill_start;
  std::mutex inject_mu, audit_mu;
};

/// A target's entry in the record's "nodes", and its exit code.
struct TargetOutcome {
  nlohmann::json node_json;
  int exit_code = kDrillOk;
};

/// Drills target `i` of `c.plan`: its own clock (t = 0 at its own injection) and its own pollers.
TargetOutcome run_target(DrillContext& c, std::size_t i);

}  // namespace cmax::drill
