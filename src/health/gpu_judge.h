#pragma once
// Judging the GPU checks: cmax-gpucheck's raw numbers (gpu_raw.h) against per-model floors
// (gpu_thresholds.h), and what each way a cmax-gpucheck run can end means. Pure: no I/O.

#include <string_view>
#include <vector>

#include "core/process.h"
#include "health/gpu_raw.h"
#include "health/gpu_thresholds.h"
#include "health/result.h"

namespace cmax::health {

/// The GPU check ids, in report order. Per GPU: matmul, correctness, membw, pcie_h2d, pcie_d2h;
/// per ordered GPU pair: nvlink.
inline constexpr std::string_view kGpuCheckIds[] = {"gpu.matmul",   "gpu.correctness", "gpu.membw",
                                                    "gpu.pcie_h2d", "gpu.pcie_d2h",    "gpu.nvlink"};

/// One result per GPU check id, all with `outcome` and `reason` and no target: the checks could
/// not run at all (no program, no device, a timeout, a crash).
std::vector<CheckResult> gpu_results_all(audit::Outcome outcome, std::string_view reason, bool timed_out = false);

/// Judges a parsed document: results per GPU ("gpu0") and per GPU pair ("gpu0->gpu1"). An unknown
/// model is measured but unverified ("no thresholds for <name>"); a step's CUDA error fails, or is
/// unverified when the GPU was merely busy (out of memory); a known-answer mismatch, a run that
/// differs from the first, or a checksum that differs from the other GPUs of its model fails.
std::vector<CheckResult> judge_gpu(const GpuRaw& raw, const GpuThresholds& thresholds);

/// What a finished cmax-gpucheck run means: exit 0 (or 3, CUDA broken) -> judge_gpu on its JSON;
/// exit 2 -> not_applicable "no CUDA device"; a timeout -> fail with timed_out; a crash, another
/// exit code or malformed JSON -> unverified with the tail of stderr.
std::vector<CheckResult> judge_gpucheck_run(const core::ProcessResult& run, const GpuThresholds& thresholds);

}  // namespace cmax::health
