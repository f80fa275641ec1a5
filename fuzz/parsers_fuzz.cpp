// libFuzzer target: the audit's pure text parsers (dpkg status, os-release, NVIDIA driver version,
// KEY=VALUE configs, /proc/modules, /proc/mounts, PCI config space, cpuinfo, NUMA meminfo, nvidia
// params, modprobe options, mlxconfig, virtnet, nvidia-smi boost-slider).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "audit/parse/dpkg_status.h"
#include "audit/parse/health_check.h"
#include "audit/parse/kv_conf.h"
#include "audit/parse/nvidia_version.h"
#include "audit/parse/os_release.h"
#include "audit/parse/pci_config.h"
#include "audit/parse/platform.h"
#include "audit/parse/sysfs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)cmax::audit::parse_dpkg_status(in);
  (void)cmax::audit::parse_os_release(in);
  (void)cmax::audit::parse_health_check_states(in).describe();
  if (auto actions = cmax::audit::classify_health_script(in)) {
    if (actions->drains != (actions->drain_line > 0) || actions->resumes != (actions->resume_line > 0)) __builtin_trap();
  }
  (void)cmax::audit::kernel_package_version(in, in);
  (void)cmax::audit::parse_nvidia_version(in);
  (void)cmax::audit::parse_kv_conf(in);
  (void)cmax::audit::parse_proc_modules(in);
  (void)cmax::audit::parse_proc_mounts(in);
  (void)cmax::audit::parse_limits_memlock(in);
  (void)cmax::audit::parse_sysfs_state(in);
  (void)cmax::audit::has_extended_config(in);
  (void)cmax::audit::parse_pci_ext_caps(in);
  if (auto acs = cmax::audit::parse_acs_control(in)) (void)cmax::audit::describe_acs(*acs);
  (void)cmax::audit::pci_upstream_chain(in);
  (void)cmax::audit::resolve_link_target("/sys/bus/pci/devices/0000:00:01.0", in);
  (void)cmax::audit::parse_cpuinfo(in);
  (void)cmax::audit::count_cpulist(in);
  (void)cmax::audit::parse_node_memtotal_kb(in);
  (void)cmax::audit::parse_nvidia_params(in);
  (void)cmax::audit::parse_modprobe_options(in);
  (void)cmax::audit::parse_mlxconfig_query(in);
  (void)cmax::audit::parse_virtnet_running_version(in);
  (void)cmax::audit::parse_boost_slider_list(in);
  return 0;
}
