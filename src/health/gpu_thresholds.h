#pragma once
// Per-model floors for the GPU checks as data: data/gpu-thresholds.json (schema
// cmax.gpu-thresholds/1), built into cmax and replaceable with a file. See docs/gpu-checks.md.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::health {

/// Floors for one measurement. Unset (both absent): reported, not judged.
struct GpuFloor {
  std::optional<double> fail_below;
  std::optional<double> warn_below;
  std::optional<double> spec;  ///< the datasheet figure the floors derive from, for the report
  bool set() const { return fail_below || warn_below; }
};

struct GpuModelThresholds {
  std::string match;  ///< a substring of the CUDA device name: "H200", "H100 80GB HBM3"
  std::string model;  ///< for humans: "H200 SXM (HGX)"
  std::string notes;
  GpuFloor matmul_tflops, membw_gbps, pcie_h2d_gbps, pcie_d2h_gbps, nvlink_gbps;
};

struct GpuThresholds {
  std::string origin;         ///< "built-in data/gpu-thresholds.json" or the file path
  std::string matmul_kernel;  ///< the GEMM kernel matmul floors were set for
  double node_relative_min = 0.85;  ///< a GPU below this fraction of its node's median (same model) fails
  std::vector<GpuModelThresholds> models;
};

/// Parses a gpu-thresholds document; errors name `origin` and the entry at fault.
Result<GpuThresholds> parse_gpu_thresholds(std::string_view text, std::string_view origin);
/// The copy of data/gpu-thresholds.json built into this binary.
Result<GpuThresholds> builtin_gpu_thresholds();
/// The built-in JSON text itself (tests compare it with data/gpu-thresholds.json).
std::string_view builtin_gpu_thresholds_text();
/// Reads and parses a thresholds file.
Result<GpuThresholds> load_gpu_thresholds_file(const std::string& path);
/// The entry whose `match` is the longest substring of `device_name`, or nullptr.
const GpuModelThresholds* match_gpu_model(const GpuThresholds& t, std::string_view device_name);

}  // namespace cmax::health
