#include "signals/signal.h"

#include <array>

namespace cmax::signals {
namespace {

constexpr std::array<std::string_view, kActionCount> kActions{"ignore",    "monitor", "restart_app", "reset_gpu",
                                                              "drain",     "reboot_node", "replace"};
constexpr std::array<std::string_view, kKindCount> kKinds{
    "xid",         "sxid",        "soft_lockup", "hard_lockup", "hung_task", "mce",        "edac_ce",
    "edac_ue",     "aer_corrected", "aer_nonfatal", "aer_fatal", "nvme",     "block_io",   "fs_error",
    "nfs_timeout", "nfs_ok",      "lustre",      "lustre_conn", "ib_port",   "ib_health",  "net_carrier",
    "net_link_up", "oom",         "conntrack",   "gpu_off_bus", "mlx5_cmd_timeout", "mlx5_fatal", "efa_admin",
    "fs_readonly", "block_eod", "md_degraded", "md_failed", "oom_memcg", "kernel_panic", "kernel_oops", "nfs_state",
    "nfs_writeback", "peermem", "gpu_lib_segfault", "mlx5_pcie_power", "mlx5_cmd_err", "nvlink_training", "file_max",
    "memory_failure", "gpu_lost",    "gpu_ecc_ue", "gpu_row_remap",
    "gpu_retired_pages", "gpu_throttle", "gpu_pcie_link", "gpu_stalled", "ib_port_down", "ib_port_up",
    "ib_link_downed", "fs_hung", "fs_ok"};

}  // namespace

std::string_view to_string(Action a) { return kActions[static_cast<int>(a)]; }
std::string_view to_string(Kind k) { return kKinds[static_cast<int>(k)]; }

std::optional<Action> parse_action(std::string_view s) {
  for (int i = 0; i < kActionCount; ++i)
    if (kActions[i] == s) return static_cast<Action>(i);
  return std::nullopt;
}

std::optional<Kind> parse_kind(std::string_view s) {
  for (int i = 0; i < kKindCount; ++i)
    if (kKinds[i] == s) return static_cast<Kind>(i);
  return std::nullopt;
}

}  // namespace cmax::signals
