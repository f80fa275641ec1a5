#pragma once
// Judging what NVIDIA's own tools report: `nvidia-smi topo -m` (gpu.topology), `dcgmi diag`
// (gpu.dcgm_diag) and nvbandwidth (gpu.nvbandwidth). Parsed values (src/gputools) in,
// CheckResults out; category reliability. Pure: no I/O.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gputools/dcgm_diag.h"
#include "gputools/nvbandwidth.h"
#include "gputools/topo.h"
#include "health/gpu_thresholds.h"
#include "health/result.h"

namespace cmax::health {

struct TopoJudgeOptions {
  std::string gpu_model;  ///< the CUDA/NVML device name, "NVIDIA H100 80GB HBM3"; matched in thresholds
  /// Overrides the thresholds: true for an NVLink (SXM/HGX) box, false for PCIe-only.
  std::optional<bool> expect_nvlink;
  /// The bonded NVLink count every GPU pair must show (18 on HGX H100/H200/B200, 12 on HGX A100);
  /// unset: every pair must show the count most pairs show.
  std::optional<int> expected_nvlinks;
};

/// One result, id "gpu.topology", target "node". NVLink expected (expect_nvlink, else the model's
/// nvlink floor in `thresholds`): every GPU pair NV<n> with the same n, else fail naming the pair;
/// no NVLink expected: pass; model unknown and no option: unverified unless every pair is NV<n>
/// alike. One GPU: not_applicable. The summary lists each GPU's nearest NIC (info only).
CheckResult judge_topology(const gputools::TopoMatrix& topo, const GpuThresholds& thresholds,
                           const TopoJudgeOptions& options);

/// One result per test, id "gpu.dcgm_diag", target the test's name ("GPU Memory", "memory"):
/// Fail -> fail, Warn -> warn, Skip / Not Run -> unverified, Pass -> pass; reasons quote dcgmi's
/// warnings. No test at all, or a runtime error: one unverified result, target "node".
std::vector<CheckResult> judge_dcgm_diag(const gputools::DcgmDiag& diag);

/// One result per testcase, id "gpu.nvbandwidth", target the testcase name: an error -> fail with
/// its text; a link below 90% of its matrix's median -> fail naming the link; a CE copy below the
/// model's pcie/nvlink floor -> fail or warn; Waived -> not_applicable. No testcase: one unverified
/// result, target "node". `thresholds` may be null (no floors); `gpu_model` names the GPU where the
/// run does not (-j v0.5 lists no device), else the first device's name is matched.
std::vector<CheckResult> judge_nvbandwidth(const gputools::Nvbandwidth& run, const GpuThresholds* thresholds,
                                           std::string_view gpu_model = {});

/// A link below this fraction of its matrix's median fails (gpu-fryer's 10% tolerance, per link).
inline constexpr double kLinkMedianMin = 0.90;

}  // namespace cmax::health
