#pragma once
// Runs a planned `cmax nccl sweep` into its run directory: each step's launcher through an
// injected StepLauncher (the real one spawns mpirun or srun; tests fake it), each step's log and
// stderr kept beside it, the runs parsed and analysed, and nccl.json (cmax.nccl/1) written.
// A step that fails to start, exits non-zero or gives no table is kept as a partial result; a stop
// request ends the sweep after the running step and what was measured is still analysed.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/process.h"
#include "core/result.h"
#include "nccl/analysed_run.h"
#include "nccl/recipe.h"
#include "nccl/reference.h"
#include "nccl/step_process.h"
#include "nccl/sweep_plan.h"

namespace cmax::nccl {

/// The sweep's exit codes (also its report's `exit_code`): every run clean; an anomaly; a step
/// failed or the sweep was interrupted (the rest still analysed).
inline constexpr int kSweepClean = 0, kSweepAnomaly = 1, kSweepPartial = 2;

/// Runs one step's launcher, bounded by `spec.timeout`. The seam tests fake.
using StepLauncher = std::function<Result<StepOutcome>(const core::ProcessSpec& spec)>;

/// What the sweep runs and what its report says about the plan.
struct SweepRunOptions {
  SweepOptions plan;             ///< launcher, node counts, ranks per node, hosts, reservation (reported)
  std::vector<SweepStep> steps;  ///< plan_sweep(plan), in run order
  std::string dir;               ///< the run directory; exists
  std::chrono::seconds step_timeout{1800};
  bool resume = false;  ///< keep the steps an earlier sweep into `dir` finished (same argv, exit 0, log present)
  bool charts = true;   ///< an SVG per run into `dir`
  std::vector<RecipeFinding> findings;  ///< the environment recipe's, for the report
  std::vector<std::string> notes;       ///< for the report (a lowered -e)
  const std::atomic<bool>* stop = nullptr;  ///< set (from a signal handler) to end the sweep; may be null
};

/// One step as recorded: run, failed or kept from an earlier sweep.
struct SweepStepRecord {
  std::string step;   ///< "all_reduce-2n-golden"
  std::string error;  ///< "" when the step gave its table and exited 0
  double wall_s = 0;
  bool kept = false;  ///< from the earlier sweep (--resume), not measured again
};

/// Progress callbacks, each optional, called on the calling thread. `i` counts from 0 of `n` steps.
struct SweepHooks {
  std::function<void(std::size_t i, std::size_t n, const SweepStep&)> on_start;       ///< before a launch
  std::function<void(std::size_t i, std::size_t n, const SweepStepRecord&)> on_done;  ///< after a step (not a failed start)
  std::function<void(const std::string& step, const std::string& warning)> on_warning;
};

struct SweepRunResult {
  std::vector<AnalysedRun> runs;
  std::vector<SweepStepRecord> steps;  ///< every step recorded, in order (a failed start too)
  std::vector<ScalingFinding> scaling;
  std::size_t kept = 0;
  bool interrupted = false;
  int exit_code = kSweepClean;
  std::string report;  ///< nccl.json's text, without the final newline
};

/// Runs `o.steps` through `launch`, writes each step's log (<step>.log, <step>.log.stderr when it
/// said anything), the charts and nccl.json into `o.dir`, and returns what the renderer needs. A
/// step's failure is part of the result (partial), never an error.
SweepRunResult run_sweep(const SweepRunOptions& o, const std::vector<Reference>& refs,
                                 const StepLauncher& launch, const SweepHooks& hooks = {});

/// The real launcher: run_step_process with `stop`.
StepLauncher process_launcher(const std::atomic<bool>* stop);

}  // namespace cmax::nccl
