#pragma once
// The signal engine's vocabulary: what a kernel log line says (a Signal), what to do about it
// (an Action, strongest last), and the grouping of many lines into one Incident.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cmax::signals {

/// What to do, in increasing strength. Correlation keeps the strongest action of an incident.
enum class Action : std::uint8_t { ignore, monitor, restart_app, reset_gpu, drain, reboot_node, replace };
inline constexpr int kActionCount = 7;
std::string_view to_string(Action a);
std::optional<Action> parse_action(std::string_view s);

/// Kinds of kernel signals. Stable names (to_string) are part of the cmax.scan/1 schema.
enum class Kind : std::uint8_t {
  xid,             ///< NVRM: Xid
  sxid,            ///< nvidia-nvswitchN: SXid
  soft_lockup,     ///< watchdog: BUG: soft lockup - CPU#N stuck for Ns!
  hard_lockup,     ///< watchdog: Watchdog detected hard LOCKUP on cpu N
  hung_task,       ///< INFO: task NAME:PID blocked for more than N seconds.
  mce,             ///< mce: [Hardware Error]: ...
  edac_ce,         ///< EDAC MCn: N CE ...
  edac_ue,         ///< EDAC MCn: N UE ...
  aer_corrected,   ///< PCIe Bus Error: severity=Corrected
  aer_nonfatal,    ///< PCIe Bus Error: severity=Uncorrected (Non-Fatal) / Uncorrectable (Non-Fatal)
  aer_fatal,       ///< PCIe Bus Error: severity=Uncorrected (Fatal), or AER: ... can't recover
  nvme,            ///< nvme nvmeN: ... (timeouts, resets, controller errors)
  block_io,        ///< blk_update_request / I/O error, dev sdX, sector N
  fs_error,        ///< EXT4-fs error / XFS ... Corruption / Metadata I/O error
  nfs_timeout,     ///< nfs: server X not responding, still trying
  nfs_ok,          ///< nfs: server X OK (closes nfs_timeout)
  lustre,          ///< LustreError: ...
  lustre_conn,     ///< Lustre: ... Connection to X was lost
  ib_port,         ///< mlx5_core ...: Port module event: ... Cable unplugged, [error] High Temperature (monitor)
  ib_health,       ///< mlx5_core ...: health compromised / ... internal error
  net_carrier,     ///< ib0: lost carrier / Link is Down
  net_link_up,     ///< ... Link is Up / carrier on (closes net_carrier)
  oom,             ///< Out of memory: Killed process N (NAME) / oom-kill:
  conntrack,       ///< nf_conntrack: table full, dropping packet
  gpu_off_bus,     ///< NVRM: ... GPU has fallen off the bus (the driver's own words, with or without Xid 79)
  mlx5_cmd_timeout,  ///< mlx5_core ...: wait_func:N:(pid N): CMD(0xN) timeout. Will cause a leak of a command resource
  mlx5_fatal,      ///< mlx5_core ...: poll_health: Fatal error N detected / print_health_info: synd 0xN: ...
  efa_admin,       ///< efa ...: admin queue failures (completion timeout, queue closed, reset indication, not ready)
  // Node faults that are not the GPU (issue 37).
  fs_readonly,     ///< EXT4-fs (sda1): Remounting filesystem read-only / BTRFS info (device sdg): forced readonly
  block_eod,       ///< attempt to access beyond end of device (a partition or mapping smaller than its filesystem)
  md_degraded,     ///< md/raid1:md0: Disk failure on sdc1, disabling device. (the array runs on the others)
  md_failed,       ///< md/raid0md0: Disk failure on nvme0n1p1 detected, failing array. / continuing on 0 devices
  oom_memcg,       ///< Memory cgroup out of memory: Killed process / oom-kill:...,oom_memcg=: the job's limit
  kernel_panic,    ///< Kernel panic - not syncing: ... / sysrq: Trigger a crash (deliberate: not fatal)
  kernel_oops,     ///< Oops: 0002 [#1] SMP / BUG: unable to handle ... / general protection fault: 0000 [#1]
  nfs_state,       ///< NFS: __nfs4_reclaim_open_state: Lock reclaim failed! / NFSv4: state recovery failed
  nfs_writeback,   ///< a hung-task or lockup trace stuck in NFS writeback (nfs_wb_all, nfs_writepages ... [nfs])
  peermem,         ///< nvidia-peermem nv_get_p2p_free_callback: ERROR detected invalid context (harmless per NVIDIA)
  gpu_lib_segfault,  ///< NAME[PID]: segfault at ... in libnccl.so.2 / libcuda.so / libnvidia-ml.so: the application's
  mlx5_pcie_power, ///< mlx5_core ...: Detected insufficient power on the PCIe slot (27W).
  mlx5_cmd_err,    ///< mlx5_core ...: ACCESS_REG(0x805) op_mod(0x1) failed, status bad parameter(0x3), ...
  nvlink_training, ///< NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!
  file_max,        ///< VFS: file-max limit 1000000 reached
  memory_failure,  ///< Memory failure: 0x7e025e: Sending SIGBUS to ... / recovery action for dirty page: Recovered
  // Kinds from here on come from cmaxd's probes (NVML, InfiniBand sysfs, filesystem checks),
  // never from a log line; classify() does not return them.
  gpu_lost,          ///< NVML: the GPU is lost / fell off the bus (NVML_ERROR_GPU_IS_LOST)
  gpu_ecc_ue,        ///< NVML: the volatile uncorrected ECC count rose
  gpu_row_remap,     ///< NVML: a row remap is pending (reset the GPU); fatal: remapping failed
  gpu_retired_pages, ///< NVML: pages retired for ECC errors (fatal: a retirement is pending)
  gpu_throttle,      ///< NVML: hardware slowdown, thermal or power-brake throttling
  gpu_pcie_link,     ///< NVML: the PCIe link runs below its maximum generation or width
  gpu_stalled,       ///< NVML: utilisation high while power stays low (a stalled collective)
  ib_port_down,      ///< sysfs: an InfiniBand port left ACTIVE / LinkUp
  ib_port_up,        ///< sysfs: the port is ACTIVE / LinkUp again (closes ib_port_down)
  ib_link_downed,    ///< sysfs: the port's link_downed counter rose (the link flapped)
  fs_hung,           ///< a configured mount did not answer stat/statfs within its timeout
  fs_ok,             ///< the mount answers again (closes fs_hung)
};
inline constexpr int kKindCount = 56;
/// Kinds below this come from log lines; the rest only from probes.
inline constexpr int kLineKindCount = 44;
std::string_view to_string(Kind k);
std::optional<Kind> parse_kind(std::string_view s);

/// One classified line. Views point into the line they came from.
struct Signal {
  Kind kind = Kind::xid;
  int code = -1;               ///< Xid/SXid number, CPU number for lockups; -1 when none
  std::string_view device;     ///< PCI address as printed ("0000:06:00"), disk, interface, CPU
  std::string_view subject;    ///< process, server, mount: whatever the line names
  bool fatal = false;          ///< the line says Fatal / Uncorrectable / UE
  bool corrected = false;      ///< MCE: the line says the error was corrected
  int recovery_action = -1;    ///< Xid 154: the new recovery action (0-5), else -1
  int caused_by = -1;          ///< Xid 45 "caused by previous Xid N", else -1
  bool nonfatal_word = false;  ///< the line says Nonfatal / Non-fatal
  /// The registers a line prints in parentheses: Xid 144-150 (IntrInfo, ErrorStatus, debug x5),
  /// Xid 74 (the seven NVLink error registers). nregs = how many were read.
  std::array<std::uint32_t, 7> regs{};
  std::uint8_t nregs = 0;
  /// The NVIDIA driver branch of the node the line came from (570, 575...), -1 when unknown. Set
  /// by the reader (cmax scan --driver-branch, or /proc/driver/nvidia/version for this machine's
  /// own log and cmaxd), never by classify(). Picks the Xid 144-150 decode.
  int driver_branch = -1;
};

}  // namespace cmax::signals
