#pragma once
// The GPU checks: a CUDA matmul for TFLOP/s and bit-exact agreement across GPUs and runs, device
// memory bandwidth, PCIe H2D/D2H and NVLink peer bandwidth. The CUDA code lives in its own program,
// cmax-gpucheck (apps/cmax-gpucheck, built only when nvcc is found), which prints raw measurements
// as JSON; cmax runs it as a bounded child and judges the numbers here against per-model
// thresholds kept as data (data/gpu-thresholds.json). Without a GPU or without the program, every
// GPU check is not_applicable with the reason, never a pass.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "health/result.h"

namespace cmax::health {

struct GpuCheckOptions {
  /// The cmax-gpucheck program; empty: next to the running cmax binary, then on PATH.
  std::string program;
  /// Threshold table; nullopt: the built-in copy of data/gpu-thresholds.json.
  std::optional<std::string> thresholds_file;
  std::chrono::milliseconds timeout{120000};  ///< for the whole program run
  std::vector<int> devices;                    ///< empty: every visible GPU
  /// Also run `nvidia-smi -q -x` and `nvidia-smi topo -m` on this node and judge them
  /// (gpu_tool_output.h), when nvidia-smi is installed.
  bool live_tools = true;
  std::string nvidia_smi = "nvidia-smi";  ///< the program (a path in tests)
  std::chrono::milliseconds tool_timeout{30000};  ///< for each nvidia-smi run
  /// Saved outputs of nvidia-smi, topo -m, dcgmi diag or nvbandwidth to judge beside the checks.
  std::vector<std::string> tool_outputs;
};

/// Runs cmax-gpucheck and judges its output; one CheckResult per check and GPU (or GPU pair); then
/// the live nvidia-smi checks and the saved tool outputs (gpu_tool_output.h).
/// Errors only for a bad thresholds file; a missing program, no GPU, a crash or a timeout become
/// results (not_applicable / unverified / fail with timed_out).
Result<std::vector<CheckResult>> run_gpu_checks(const GpuCheckOptions& options);

}  // namespace cmax::health
