#pragma once
// Judging what nvidia-smi reports about each GPU (gputools/smi.h, read from `nvidia-smi -q -x` or
// a --query-gpu CSV): memory errors (ECC, row remapping, page retirement), hardware clock
// slowdowns, the PCIe link, the driver's recovery action and NVLink fabric registration. The
// rules and the sources they follow are in gpu_smi_judge.cpp. Pure: no I/O.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "gputools/smi.h"
#include "health/result.h"

namespace cmax::health {

/// The check id of every result judge_smi returns.
inline constexpr std::string_view kSmiCheckId = "gpu.smi_health";

struct SmiJudgeOptions {
  /// Idle GPUs lower their PCIe link generation to save power, so by default a generation below
  /// the maximum warns only on a busy GPU; true warns on idle GPUs too. A width below the
  /// maximum always fails.
  bool pcie_gen_when_idle = false;
  /// Retired pages (single- plus double-bit) at or above this fail: NVIDIA DCGM's
  /// DCGM_LIMIT_MAX_RETIRED_PAGES, which matches the field diagnostic.
  std::uint64_t retired_pages_limit = 63;
  /// Whether ECC is expected on (a data-center GPU); nullopt decides from the product name.
  std::optional<bool> data_center;
};

/// One result per GPU, id kSmiCheckId, category reliability, target "gpu<N>" with N the GPU's
/// position in bus order (the bus id is in the summary). fail: a fault that needs a reset, a
/// drain or an RMA (the reason says which); warn: something to watch or fix at the next
/// maintenance; unverified: nvidia-smi gave none of the fault readings; never a pass without
/// one. A report without GPUs gives one unverified result with an empty target.
std::vector<CheckResult> judge_smi(const gputools::SmiReport& report,
                                   const SmiJudgeOptions& options = {});

/// Whether a product is a data-center GPU (Tesla, A100, H100, H200, B200, L40S, ...), from its
/// name and, where known, its brand.
bool is_data_center_gpu(std::string_view product_name, std::string_view product_brand = {});

}  // namespace cmax::health
