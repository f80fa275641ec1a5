#pragma once
// Parsers for what the platform collector reads: /proc/cpuinfo, NUMA node files, the NVIDIA
// driver's /proc/driver/nvidia/params, modprobe.d `options` lines, `mlxconfig q` tables,
// `virtnet version` and `nvidia-smi boost-slider -l`. Pure: text in, values out.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::audit {

/// What /proc/cpuinfo says about the first processor: its flags ("flags" on x86, "Features" on
/// Arm) and the architecture they imply ("x86_64", "aarch64" or "" when it cannot tell).
struct CpuInfo {
  std::set<std::string, std::less<>> flags;
  std::string arch;
  std::string model_name;  ///< "model name" (x86) or "" (Arm prints none)
};
CpuInfo parse_cpuinfo(std::string_view text);

/// The number of CPUs in a cpulist ("0-71,144-215" -> 144); nullopt when malformed. "" is 0.
std::optional<std::size_t> count_cpulist(std::string_view cpulist);

/// "Node 0 MemTotal:       97821952 kB" in a NUMA node's meminfo -> 97821952 (kB).
std::optional<std::uint64_t> parse_node_memtotal_kb(std::string_view meminfo);

/// /proc/driver/nvidia/params: "RmProfilingAdminOnly: 1", "RegistryDwords: """ -> name -> value
/// (quotes removed).
std::map<std::string, std::string, std::less<>> parse_nvidia_params(std::string_view text);

/// modprobe.d: every `options MODULE NAME=VALUE ...` (continuation lines joined, comments dropped)
/// -> "MODULE.NAME" -> VALUE; a later file or line overrides an earlier one.
std::map<std::string, std::string, std::less<>> parse_modprobe_options(std::string_view text);

/// One `mlxconfig -d DEV q` parameter: "INTERNAL_CPU_MODEL    EMBEDDED_CPU(1)" -> {EMBEDDED_CPU, 1}.
struct MlxconfigValue {
  std::string label;            ///< "EMBEDDED_CPU", "" when the value is a bare number
  std::optional<long long> number;
};
/// The parameters of the first device in `mlxconfig q` output (the "Configurations:" table; when it
/// has Default/Current/Next Boot columns, the current one).
std::map<std::string, MlxconfigValue, std::less<>> parse_mlxconfig_query(std::string_view text);

/// `virtnet version` prints the running and staged controllers:
/// [{"Original Controller": "v24.10.17"}, {"Destination Controller": "v24.10.19"}]. The running
/// ("Original") controller's version without its 'v'; nullopt when there is none.
std::optional<std::string> parse_virtnet_running_version(std::string_view text);

/// `nvidia-smi boost-slider -l`: per GPU, the sliders it lists with their current and max values.
struct BoostSlider {
  std::string gpu;   ///< "0"
  std::string name;  ///< "vboost"
  std::optional<long long> value, max;
};
std::vector<BoostSlider> parse_boost_slider_list(std::string_view text);

}  // namespace cmax::audit
