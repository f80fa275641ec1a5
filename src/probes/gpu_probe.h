#pragma once
// The NVML probe: per GPU, Xid events, a lost GPU, uncorrected ECC errors, row remapping, page
// retirement, hardware throttling, a degraded PCIe link and the "busy but cold" signature of a
// stalled collective. The judgement is a pure function over snapshots (diff_gpu), so it is tested
// without a library; GpuProbe only reads snapshots through NvmlApi and keeps the state between
// polls.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probes/nvml_api.h"
#include "probes/probe.h"

namespace cmax::probes {

using SteadyTime = std::chrono::steady_clock::time_point;

/// Thresholds of the probe's judgements.
struct GpuProbeOptions {
  /// Stalled collective: utilisation.gpu at or above this percentage...
  unsigned util_min = 90;
  /// ...while power usage stays at or below this fraction of the enforced power limit...
  double power_max_fraction = 0.35;
  /// ...for at least this long.
  std::chrono::seconds stall_seconds{60};
  /// Idle GPUs drop their PCIe link generation to save power, so by default a generation below
  /// the maximum counts only while the GPU is busy (utilisation > 0); a width below the maximum
  /// always counts. True counts the generation of idle GPUs too.
  bool pcie_gen_when_idle = false;
  /// The longest one poll waits for Xid events (also bounded by the poll's budget). Events queue
  /// in the NVML event set between polls, so a short wait loses none.
  std::chrono::milliseconds event_wait{100};
};

/// The PCIe link as NVML reports it; 0 where a reading is unavailable.
struct PcieLink {
  unsigned gen = 0;
  unsigned max_gen = 0;
  unsigned width = 0;
  unsigned max_width = 0;
};

/// One reading of one GPU. A reading NVML could not give (not supported, no permission, an old
/// driver without the symbol) is nullopt and leaves the probe's judgement of it unchanged.
struct GpuSnapshot {
  int index = -1;         ///< NVML index, named in text when the bus id is unknown
  std::string bus_id;     ///< kernel form "0000:06:00.0"; empty when never readable
  std::string uuid;       ///< "GPU-8f6c..."; empty when unreadable
  bool lost = false;      ///< some call answered NVML_ERROR_GPU_IS_LOST
  std::vector<int> xids;  ///< Xid events delivered since the last poll, in order
  std::optional<unsigned long long> ecc_ue_volatile;  ///< volatile uncorrected ECC total
  std::optional<bool> remap_pending;
  std::optional<bool> remap_failed;
  std::optional<unsigned> retired_dbe_pages;  ///< pages retired for double-bit ECC errors
  std::optional<bool> retirement_pending;
  std::optional<unsigned long long> clock_event_reasons;  ///< nvmlClocksThrottleReason* bits
  std::optional<PcieLink> pcie;
  std::optional<unsigned> util_gpu_percent;
  std::optional<unsigned> power_mw;
  std::optional<unsigned> power_limit_mw;
};

/// What the probe remembers of one GPU between polls. Default-constructed = never seen.
struct GpuState {
  bool seen = false;
  bool lost = false;
  std::optional<unsigned long long> ecc_ue_volatile;
  bool remap_pending = false;
  bool remap_failed = false;
  std::optional<unsigned> retired_dbe_pages;
  bool retirement_pending = false;
  unsigned long long throttle_reasons = 0;  ///< the reported reasons still active
  bool pcie_width_low = false;
  bool pcie_gen_low = false;
  std::optional<SteadyTime> stall_since;  ///< start of the current busy-but-cold stretch
  bool stall_reported = false;
};

/// The findings of one reading and the state to remember for the next.
struct GpuDiff {
  std::vector<Finding> findings;
  GpuState next;
};

/// Judges one GPU's reading against what was remembered. Pure. Each fault is reported once when
/// it appears (the first reading reports faults already present; a volatile ECC count above zero
/// counts as risen from zero, since the driver loaded) and again only after it cleared and came
/// back; counters (ECC, retired pages) report each rise; every Xid event is reported. `at` (a
/// steady clock) times the stall condition.
GpuDiff diff_gpu(const GpuState& before, const GpuSnapshot& now, const GpuProbeOptions& options,
                 SteadyTime at);

/// "00000000:06:00.0" (NVML) -> "0000:06:00.0" (the kernel's form: lower case, the domain
/// printed with at least 4 hex digits). Input it cannot parse is returned lower-cased.
std::string normalize_bus_id(std::string_view nvml_bus_id);

/// Names of the throttle reasons the probe reports ("hw_slowdown,hw_thermal_slowdown"), in bit
/// order, comma-separated; the bits it does not report are ignored.
std::string throttle_reason_names(unsigned long long reasons);

/// The throttle reason bits that count as faults: HW slowdown, HW thermal, HW power brake, SW
/// thermal.
inline constexpr unsigned long long kFaultThrottleReasons =
    nvml::nvmlClocksThrottleReasonHwSlowdown | nvml::nvmlClocksThrottleReasonHwThermalSlowdown |
    nvml::nvmlClocksThrottleReasonHwPowerBrakeSlowdown |
    nvml::nvmlClocksThrottleReasonSwThermalSlowdown;

/// Reads every GPU through NVML and reports what changed (Probe's contract). Owns the library:
/// frees its event set before the library shuts down. Not thread-safe; one thread polls. A single
/// NVML call that hangs inside the driver cannot be interrupted; between calls the probe stops
/// reading further GPUs once the budget is spent (they keep their state until the next poll).
class GpuProbe final : public Probe {
 public:
  explicit GpuProbe(nvml::NvmlLibrary library, GpuProbeOptions options = {});
  ~GpuProbe() override;
  GpuProbe(const GpuProbe&) = delete;
  GpuProbe& operator=(const GpuProbe&) = delete;

  std::string_view name() const override { return "nvml"; }
  Result<std::vector<Finding>> poll(std::chrono::milliseconds budget) override;

 private:
  struct Gpu {
    nvml::nvmlDevice_t handle = nullptr;
    bool events_registered = false;  // or registration is not supported
    std::string bus_id;  // last known, for a GPU that is lost before its bus id can be read
    std::string uuid;
    GpuState state;
  };

  std::optional<GpuSnapshot> read(unsigned index, Gpu& gpu);
  void register_events(Gpu& gpu);
  // Adds the Xid events waiting in the event set to the snapshots of their GPUs; returns those
  // of no known GPU as findings.
  std::vector<Finding> drain_events(SteadyTime deadline,
                                    std::vector<std::optional<GpuSnapshot>>& snapshots);

  nvml::NvmlLibrary library_;  // first member: destroyed last
  GpuProbeOptions options_;
  nvml::nvmlEventSet_t event_set_ = nullptr;
  bool event_set_tried_ = false;
  std::vector<Gpu> gpus_;  // by NVML index
};

}  // namespace cmax::probes
