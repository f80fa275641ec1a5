#pragma once
// What nvidia-smi reports about each GPU, as read from `nvidia-smi -q -x` (smi_xml.h) or
// `nvidia-smi --query-gpu=... --format=csv` (smi_csv.h): the readings a health judge needs
// (src/health/gpu_smi_judge.h). Every reading is optional. A reading that nvidia-smi printed but
// that carries no value ("N/A", "[Not Supported]", "Unknown Error", "ERR!") is kept in `issues`
// under its field name, so "not in the output", "not available" and "could not be read" (itself
// a fault sign) stay distinguishable. Field names are nvidia-smi's --query-gpu names
// (`nvidia-smi --help-query-gpu`), whichever format the value came from; the few readings only the
// XML has get names in the same style ("temperature.slowdown_threshold", "pcie.replay_counter").
// The functions below are defined in smi_csv.cpp, whose field table is keyed by those names.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::gputools {

/// The clock event (formerly "throttle") reasons, in NVML bit order (nvmlClocksEventReason*).
enum class ClockEvent : std::uint8_t {
  gpu_idle,
  applications_clocks_setting,
  sw_power_cap,
  hw_slowdown,
  sync_boost,
  sw_thermal_slowdown,
  hw_thermal_slowdown,
  hw_power_brake_slowdown,
  display_clocks_setting,
};
inline constexpr std::size_t kClockEventCount = 9;

struct ClockEventInfo {
  ClockEvent event;
  std::string_view name;  ///< the suffix in XML and CSV names: "hw_slowdown"
  std::uint64_t bit;      ///< the NVML bit, as in `clocks_event_reasons.active`
};

/// The reasons with their names and NVML bits (nvml.h, nvmlClocksEventReason*).
inline constexpr std::array<ClockEventInfo, kClockEventCount> kClockEvents = {{
    {ClockEvent::gpu_idle, "gpu_idle", 0x1},
    {ClockEvent::applications_clocks_setting, "applications_clocks_setting", 0x2},
    {ClockEvent::sw_power_cap, "sw_power_cap", 0x4},
    {ClockEvent::hw_slowdown, "hw_slowdown", 0x8},
    {ClockEvent::sync_boost, "sync_boost", 0x10},
    {ClockEvent::sw_thermal_slowdown, "sw_thermal_slowdown", 0x20},
    {ClockEvent::hw_thermal_slowdown, "hw_thermal_slowdown", 0x40},
    {ClockEvent::hw_power_brake_slowdown, "hw_power_brake_slowdown", 0x80},
    {ClockEvent::display_clocks_setting, "display_clocks_setting", 0x100},
}};

/// Why a printed field has no value.
enum class SmiFieldState : std::uint8_t {
  not_available,  ///< "N/A", "[N/A]"
  not_supported,  ///< "[Not Supported]", "[Requested functionality has been deprecated]"
  no_permission,  ///< "[Insufficient Permissions]"
  unreadable,     ///< "Unknown Error", "ERR!", "GPU is lost": the driver could not read it
  malformed,      ///< text this parser does not understand for the field ("12 bananas")
};

struct SmiFieldIssue {
  std::string field;  ///< "remapped_rows.pending"
  SmiFieldState state = SmiFieldState::not_available;
  std::string raw;  ///< the text as printed
};

/// One GPU. Counters are totals as nvidia-smi prints them; `_c`, `_w` are degrees Celsius, watts.
struct SmiGpu {
  std::string bus_id;  ///< kernel form "0000:07:00.0"; empty when unknown
  std::string product_name;
  std::string product_brand;  ///< XML only: "Tesla", "NVIDIA", "GeForce"
  std::string uuid;
  std::string serial;
  std::optional<int> index;  ///< nvidia-smi's index (CSV `index`; XML: document order)
  std::optional<bool> mig_enabled, mig_pending;
  std::optional<bool> persistence_mode;
  std::string pstate;  ///< "P0"
  std::optional<bool> ecc_enabled, ecc_pending;
  std::optional<std::uint64_t> ecc_volatile_uncorrected, ecc_volatile_corrected;
  std::optional<std::uint64_t> ecc_aggregate_uncorrected, ecc_aggregate_corrected;
  std::optional<std::uint64_t> retired_sbe_pages, retired_dbe_pages;  ///< retired for SBE / DBE
  std::optional<bool> retired_pending;  ///< pending blacklist or retirement (reset to apply)
  std::optional<std::uint64_t> remapped_correctable, remapped_uncorrectable;
  std::optional<bool> remap_pending, remap_failure;
  std::array<std::optional<bool>, kClockEventCount>
      clock_events{};                                ///< by ClockEvent; true = Active
  std::optional<std::uint64_t> clock_events_active;  ///< the bitmask, where printed (CSV)
  std::optional<unsigned> pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
  std::optional<std::uint64_t> pcie_replay_counter;
  std::optional<double> temperature_c, temperature_slowdown_c, temperature_shutdown_c;
  std::optional<double> power_draw_w, power_limit_w;
  std::optional<unsigned> utilization_gpu_percent;
  std::string recovery_action;               ///< "None", "Reset", ...; empty when not printed
  std::string fabric_state, fabric_status;   ///< "Completed", "Success"; empty when N/A
  std::map<std::string, std::string> other;  ///< CSV fields this parser does not map, by name
  std::vector<SmiFieldIssue> issues;         ///< printed fields without a value, in input order

  std::optional<bool> clock_event(ClockEvent e) const {
    return clock_events[static_cast<std::size_t>(e)];
  }
  /// The issue recorded for `field`, or null.
  const SmiFieldIssue* issue(std::string_view field) const {
    for (const auto& i : issues)
      if (i.field == field) return &i;
    return nullptr;
  }
};

/// One `nvidia-smi -q -x` document or one CSV query.
struct SmiReport {
  std::string driver_version;
  std::string cuda_version;               ///< XML only
  std::optional<unsigned> attached_gpus;  ///< XML `attached_gpus`, CSV `count`
  std::string timestamp;
  std::vector<SmiGpu> gpus;  ///< in output order
};

/// Classifies one printed value (already trimmed): nullopt for a value, else why it is none.
std::optional<SmiFieldState> classify_smi_value(std::string_view text);

/// "00000000:07:00.0" (nvidia-smi) -> "0000:07:00.0" (the kernel's form: lower case, a domain of
/// at least 4 hex digits). Text it cannot parse is returned lower-cased.
std::string kernel_bus_id(std::string_view smi_bus_id);

/// Stores one printed field into `gpu`: a value is parsed into the member the field maps to; a
/// non-value (or text that does not parse) becomes an issue. Returns false for a field name this
/// library does not map (the caller keeps it in `other`). Shared by the XML and CSV readers so
/// both formats fill the same members the same way.
bool set_smi_field(SmiGpu& gpu, std::string_view field, std::string_view text);

}  // namespace cmax::gputools
