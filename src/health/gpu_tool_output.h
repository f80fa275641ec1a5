#pragma once
// What the NVIDIA tools print, judged as GPU checks: a saved file of `nvidia-smi -q -x`, a
// `--query-gpu` CSV, `nvidia-smi topo -m`, `dcgmi diag` (text or -j) or nvbandwidth (text or -j),
// recognised from its content, parsed (src/gputools) and judged (gpu_smi_judge.h,
// gpu_tools_judge.h); and, on a live node, nvidia-smi run as a bounded child beside cmax-gpucheck.
// A file that cannot be read or parsed is one unverified result naming it: never a pass.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "health/gpu_thresholds.h"
#include "health/result.h"

namespace cmax::health {

enum class GpuToolKind { smi_xml, smi_csv, topo, dcgm_diag, nvbandwidth };

std::string_view gpu_tool_kind_name(GpuToolKind k);

/// Which tool printed `text`, from its content; nullopt when none is recognised.
std::optional<GpuToolKind> detect_gpu_tool_output(std::string_view text);

/// Context the judges need that one output may lack.
struct GpuToolContext {
  /// The GPU model ("NVIDIA H100 80GB HBM3") for the topology and nvbandwidth floors; empty: taken
  /// from an nvidia-smi output judged in the same call, else unknown.
  std::string gpu_model;
};

/// Judges one tool's output. `origin` (a file name) goes into a parse failure's reason.
std::vector<CheckResult> judge_gpu_tool_output(std::string_view text, std::string_view origin,
                                               const GpuThresholds& thresholds, const GpuToolContext& context = {});

/// Reads and judges saved outputs, nvidia-smi ones first so that their GPU model keys the others'
/// floors. A missing, unreadable or oversized (> 64 MiB) file is one unverified result naming it.
std::vector<CheckResult> judge_gpu_tool_files(const std::vector<std::string>& paths, const GpuThresholds& thresholds);

/// On this node: `nvidia-smi -q -x` and `nvidia-smi topo -m`, each bounded by `timeout`, judged.
/// Empty when nvidia-smi is not installed (cmax-gpucheck's results already say there is no GPU).
/// A run that hangs is a fail with timed_out (a driver that stopped answering); one that exits
/// non-zero is unverified with its message.
std::vector<CheckResult> run_live_gpu_tools(const GpuThresholds& thresholds, std::chrono::milliseconds timeout,
                                            const std::string& nvidia_smi = "nvidia-smi");

}  // namespace cmax::health
