#pragma once
// One sweep step's launcher (mpirun or srun) as a child process: its output kept (bounded), stopped
// with its whole process group on a stop request or at its deadline.

#include <atomic>

#include "core/process.h"
#include "core/result.h"

namespace cmax::nccl {

/// How a step's launcher ended; `interrupted` when a stop request (not the deadline) ended it.
struct StepOutcome {
  core::ProcessResult result;
  bool interrupted = false;
};

/// Runs `spec` up to `spec.timeout`, keeping at most `spec.max_output_bytes` per stream. On `*stop`
/// (Ctrl-C, SIGTERM; may be null) or the deadline sends SIGTERM to the process group (mpirun and
/// srun then end their ranks), SIGKILL 5 s later. An error means the launcher could not start.
Result<StepOutcome> run_step_process(const core::ProcessSpec& spec, const std::atomic<bool>* stop);

}  // namespace cmax::nccl
