#pragma once
// `cmax drill run` as one call: checks the request, shows the plan, and with --yes injects on each
// target, watches the scheduler's reaction, and writes the drill's record (run dir: drill.json,
// injected.jsonl). Rendering and exit codes stay with the caller.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/result.h"
#include "drill/run_options.h"
#include "drill/scenario.h"
#include "drill/site.h"

namespace cmax::drill {

/// What a drill will do, once the request is checked: shown before anything is injected.
struct Plan {
  RunOptions options;               ///< resolved: drill_id, nodes (the rack's), until_unix
  Scenario scenario;
  std::vector<Step> steps;          ///< the scenario's lines for these targets
  std::vector<std::string> nodes;   ///< the targets, in order
  std::vector<bool> local;          ///< per target: injected into this machine's log, else through srun
};

/// Where a drill reports as it goes. plan() comes on the caller's thread; warn() may come from
/// several targets' threads at once.
class Progress {
 public:
  virtual ~Progress() = default;
  /// The plan, once checked; always before any injection.
  virtual void plan(const Plan& plan) = 0;
  /// A target that was skipped, and why (nothing was injected there); may come from any thread.
  virtual void warn(const std::string& message) = 0;
};

/// A drill's outcome.
struct DrillRecord {
  bool injected = false;      ///< false: plan only (no --yes); the rest is empty
  std::string dir;            ///< the run directory
  nlohmann::json report;      ///< cmax.drill/1, as written to dir/drill.json
  int exit_code = kDrillOk;   ///< kDrillOk, kDrillStageFailed or kDrillEnvError (some target failed)
};

/// Runs the drill `options` asks for on `site`. `clock` gives the wall time the drill's end
/// (until_unix) counts from; `options.out` must name the run directory. An error means nothing was
/// injected, except when writing the final record failed (its message says so). Blocks until every
/// target's awaited stages are seen or timed out; targets run on up to `options.parallel` threads.
Result<DrillRecord> run_drill(const RunOptions& options, Site& site, const core::Clock& clock, Progress& progress);

}  // namespace cmax::drill
