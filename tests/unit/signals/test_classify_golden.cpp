#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/signals_catalog.h"
#include "signals/catalog.h"
#include "signals/classify.h"
#include "signals/prefix.h"
#include "support/temp_host.h"

using namespace cmax::signals;

namespace {

const Catalog& catalog() { return cmax::test::signals_catalog(); }

std::string_view message_of(std::string_view line) { return parse_line_prefix(line, 2024).message; }

bool has_anchor(std::string_view message) {
  for (std::string_view a : anchor_literals())
    if (message.find(a) != std::string_view::npos) return true;
  return false;
}

// One expected classification. `device` and `subject` are as printed in the line.
struct Expected {
  Kind kind;
  int code;
  std::string_view device;
  Action action;
  std::string_view subject = {};
  bool fatal = false;
  int recovery_action = -1;
  int caused_by = -1;
};

void expect_signal(std::string_view line, const Expected& want) {
  SCOPED_TRACE(std::string(line));
  auto sig = classify(message_of(line));
  ASSERT_TRUE(sig.has_value()) << "not classified";
  EXPECT_EQ(to_string(sig->kind), to_string(want.kind));
  EXPECT_EQ(sig->code, want.code);
  EXPECT_EQ(sig->device, want.device);
  EXPECT_EQ(sig->subject, want.subject);
  EXPECT_EQ(sig->fatal, want.fatal);
  EXPECT_EQ(sig->recovery_action, want.recovery_action);
  EXPECT_EQ(sig->caused_by, want.caused_by);
  EXPECT_EQ(to_string(catalog().action_for(*sig)), to_string(want.action));
}

// ../shared/data/xid/kernel_log_examples.txt: real Xid and SXid lines, one a line.
struct GoldenRow {
  int line;
  Expected want;
};

constexpr std::string_view kUnknown = "<unknown>";

const std::vector<GoldenRow> kGolden = {
    {1, {Kind::xid, 13, "0000:b5:00", Action::restart_app, kUnknown}},
    {2, {Kind::xid, 13, "0000:01:00", Action::restart_app}},
    {3, {Kind::xid, 31, "0000:2b:00", Action::restart_app, "llama-bench"}},
    {4, {Kind::xid, 43, "0000:01:00", Action::ignore}},
    {5, {Kind::xid, 45, "0000:61:00", Action::ignore, "distprovers-gpu"}},
    {6, {Kind::xid, 48, "0000:8a:00", Action::reset_gpu}},
    {7, {Kind::xid, 62, "0000:01:00", Action::reset_gpu}},
    {8, {Kind::xid, 64, "0000:0f:00", Action::reset_gpu, kUnknown}},
    {9, {Kind::xid, 71, "0000:b9:00", Action::restart_app, kUnknown}},
    {10, {Kind::xid, 74, "0003:00:00", Action::drain, kUnknown}},
    {11, {Kind::xid, 79, "0004:01:00", Action::reboot_node, kUnknown}},
    {12, {Kind::xid, 94, "0000:01:00", Action::restart_app}},
    {13, {Kind::xid, 94, "0000:0f:00", Action::restart_app, "python3"}},
    {14, {Kind::xid, 95, "0000:37:00", Action::reset_gpu}},
    {15, {Kind::xid, 119, "0002:00:00", Action::reset_gpu, "nvidia-smi"}},
    {16, {Kind::xid, 120, "000f:01:00", Action::reset_gpu, "python"}},
    {17, {Kind::xid, 145, "0000:5f:00", Action::drain}},
    // NETIR_LINK_EVT, IntrInfo 0x025525c6, ErrorStatus 0: the NVLink decode sheet's V1 row says RESET_GPU.
    {18, {Kind::xid, 149, "0018:01:00", Action::reset_gpu, {}, /*fatal=*/true}},
    {19, {Kind::xid, 154, "0008:01:00", Action::reset_gpu, {}, false, /*recovery_action=*/1}},
    {20, {Kind::xid, 154, "0018:01:00", Action::drain, {}, false, /*recovery_action=*/4}},
    {21, {Kind::sxid, 20009, "0000:06:00.0", Action::monitor, "nvidia-nvswitch0"}},
    {22, {Kind::sxid, 20034, "0000:00:00.0", Action::drain, "nvidia-nvswitch0", /*fatal=*/true}},
    {23, {Kind::sxid, 26008, "0004:00:00.0", Action::monitor, "nvidia-nvswitch0"}},
    {24, {Kind::sxid, 12033, "0000:c3:00.0", Action::monitor, "nvidia-nvswitch0"}},
};

std::vector<std::string> golden_lines() {
  std::vector<std::string> lines;
  std::ifstream in(cmax::test::shared_data_dir() / "xid" / "kernel_log_examples.txt");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

// Lines built from the formats in CONTEXT.md section 3 and the kernel's printk formats, one or
// more for every Kind.
struct KindRow {
  std::string_view line;
  Expected want;
};

const std::vector<KindRow> kKinds = {
    // Xid: MIG instance ids inside the parentheses, old drivers' unknown pid, the Xid 45 cause,
    // Xid 154's verdict, NVLink5.
    {"NVRM: Xid (PCI:0000:3b:00 GPU-I:07 GPU-CI:00): 13, pid=2087, name=python3, Graphics SM Warp "
     "Exception on (GPC 0, TPC 1, SM 0): Illegal Instruction Encoding",
     {Kind::xid, 13, "0000:3b:00", Action::restart_app, "python3"}},
    {"NVRM: Xid (PCI:0000:3b:00 GPU-I:02): 31, pid=77, name=train, channel 0x00000009, intr 00000000. "
     "MMU Fault: ENGINE GRAPHICS GPC0 GPCCLIENT_T1_0 faulted @ 0x7f12_34560000.",
     {Kind::xid, 31, "0000:3b:00", Action::restart_app, "train"}},
    {"NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
     {Kind::xid, 79, "0000:3b:00", Action::reboot_node, kUnknown}},
    {"NVRM: Xid (PCI:0000:3b:00): 45, pid=1234, name=python3, Ch 00000010, caused by previous Xid 79",
     {Kind::xid, 45, "0000:3b:00", Action::ignore, "python3", false, -1, /*caused_by=*/79}},
    {"NVRM: Xid (PCI:0000:3b:00): 45, pid=1234, name=python3, Ch 00000010",
     {Kind::xid, 45, "0000:3b:00", Action::ignore, "python3"}},
    {"NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot "
     "Required)",
     {Kind::xid, 154, "0000:3b:00", Action::reboot_node, {}, false, 2}},
    {"NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 "
     "(None)",
     {Kind::xid, 154, "0000:3b:00", Action::monitor, {}, false, 0}},
    {"NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)",
     {Kind::xid, 154, "0000:3b:00", Action::drain, {}, false, 3}},
    {"NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x5 (Recover IMEX "
     "domain)",
     {Kind::xid, 154, "0000:3b:00", Action::drain, {}, false, 5}},
    {"NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 (0x025525c6 0x00000000 "
     "0x00000000 0x00000000 0x00000000 0x00000000)",
     {Kind::xid, 149, "0018:01:00", Action::reset_gpu, {}, /*fatal=*/true}},
    {"NVRM: Xid (PCI:0008:01:00): 144, SAW_MVB  Nonfatal  XC0 i0 Link 12 (0x00000001 0x00000000)",
     {Kind::xid, 144, "0008:01:00", Action::drain}},
    // NVSwitch
    {"nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 28",
     {Kind::sxid, 24007, "0000:c3:00.0", Action::drain, "nvidia-nvswitch0", true}},
    {"nvidia-nvswitch3: SXid (PCI:0000:c6:00.0): 20009, Non-fatal, Link 04 RX Short Error Rate",
     {Kind::sxid, 20009, "0000:c6:00.0", Action::monitor, "nvidia-nvswitch3"}},
    // CPU
    {"watchdog: BUG: soft lockup - CPU#12 stuck for 23s! [python:1234]",
     {Kind::soft_lockup, 12, "", Action::drain, "python:1234"}},
    {"watchdog: Watchdog detected hard LOCKUP on cpu 7", {Kind::hard_lockup, 7, "", Action::reboot_node, {}, true}},
    {"NMI watchdog: Watchdog detected hard LOCKUP on cpu 31",
     {Kind::hard_lockup, 31, "", Action::reboot_node, {}, true}},
    {"INFO: task python3:4321 blocked for more than 120 seconds.",
     {Kind::hung_task, -1, "", Action::monitor, "python3:4321"}},
    {"INFO: task kworker/u16:2:123 blocked for more than 122 seconds.",
     {Kind::hung_task, -1, "", Action::monitor, "kworker/u16:2:123"}},
    // MCi_STATUS 0xbe...: VAL, UC, EN, MISCV, ADDRV, PCC: uncorrected, the processor context corrupt.
    {"mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5: be00000000800400",
     {Kind::mce, 3, "CPU 3", Action::drain, {}, true}},
    // 0x8c...: VAL, MISCV, ADDRV, no UC: a corrected error the EDAC driver decoded.
    {"EDAC sbridge MC0: CPU 0: Machine Check Event: 0 Bank 5: 8c00004000010092", {Kind::mce, 0, "CPU 0", Action::monitor}},
    // mce_notify_irq() prints it for corrected events too: the record's own lines decide (issue 37).
    {"mce: [Hardware Error]: Machine check events logged", {Kind::mce, -1, "", Action::monitor}},
    // Memory: Intel skx_edac, then AMD amd64_edac, which prints no message before "on"
    // (edac_mc.c "%d CE %s%son %s (...)" with an empty msg).
    {"EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0x4f1b3 "
     "offset:0x0 grain:32 syndrome:0x0 - err_code:0x0000:0x009f SystemAddress:0x4f1b3000)",
     {Kind::edac_ce, 1, "CPU_SrcID#0_MC#0_Chan#0_DIMM#0", Action::monitor, "MC0"}},
    {"EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#0_Chan#2_DIMM#0 (channel:2 slot:0 page:0x8a52e1 "
     "offset:0x0 grain:32 - err_code:0x0000:0x009f SystemAddress:0x8a52e1000)",
     {Kind::edac_ue, 1, "CPU_SrcID#1_MC#0_Chan#2_DIMM#0", Action::drain, "MC1", true}},
    {"EDAC MC0: 1 CE on mc#0csrow#3channel#0 (csrow:3 channel:0 page:0x1e2c9a offset:0x340 grain:64 "
     "syndrome:0x1)",
     {Kind::edac_ce, 1, "mc#0csrow#3channel#0", Action::monitor, "MC0"}},
    {"EDAC MC0: 1 UE on mc#0csrow#2channel#1 (csrow:2 channel:1 page:0x7f3a10 offset:0x0 grain:64)",
     {Kind::edac_ue, 1, "mc#0csrow#2channel#1", Action::drain, "MC0", true}},
    // PCIe AER
    {"pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0",
     {Kind::aer_corrected, -1, "0000:01:00.0", Action::monitor}},
    {"pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)",
     {Kind::aer_corrected, -1, "0000:00:01.0", Action::monitor}},
    {"nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, "
     "(Requester ID)",
     {Kind::aer_nonfatal, -1, "0000:3b:00.0", Action::drain}},
    {"pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0",
     {Kind::aer_nonfatal, -1, "0000:01:00.0", Action::drain}},
    {"pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0",
     {Kind::aer_fatal, -1, "0000:01:00.0", Action::reboot_node, {}, true}},
    {"pcieport 0000:00:03.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, "
     "(Receiver ID)",
     {Kind::aer_fatal, -1, "0000:00:03.0", Action::reboot_node, {}, true}},
    {"nvidia 0000:3b:00.0: AER: can't recover (no error_detected callback)",
     {Kind::aer_fatal, -1, "0000:3b:00.0", Action::reboot_node, {}, true}},
    // Storage
    {"nvme nvme0: I/O 123 QID 4 timeout, aborting", {Kind::nvme, -1, "nvme0", Action::drain}},
    {"nvme nvme1: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0x10",
     {Kind::nvme, -1, "nvme1", Action::drain, {}, true}},
    {"blk_update_request: I/O error, dev sda, sector 123456 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0",
     {Kind::block_io, -1, "sda", Action::drain}},
    {"I/O error, dev nvme0n1, sector 2048 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 2",
     {Kind::block_io, -1, "nvme0n1", Action::drain}},
    {"Buffer I/O error on dev sdb1, logical block 0, async page read", {Kind::block_io, -1, "sdb1", Action::drain}},
    {"EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0",
     {Kind::fs_error, -1, "sda1", Action::drain}},
    {"XFS (sdb1): Corruption detected. Unmount and run xfs_repair", {Kind::fs_error, -1, "sdb1", Action::drain}},
    {"XFS (md0): metadata I/O error in \"xfs_buf_ioend+0x1a8/0x470 [xfs]\" at daddr 0x3a0 len 8 error 5",
     {Kind::fs_error, -1, "md0", Action::drain}},
    // Network file systems
    {"nfs: server nas01 not responding, still trying", {Kind::nfs_timeout, -1, "nas01", Action::monitor}},
    {"nfs: server nas01 OK", {Kind::nfs_ok, -1, "nas01", Action::ignore}},
    {"LustreError: 11-0: scratch-OST0003-osc-ffff8a0c3b2d5000: operation ost_connect to node 10.0.0.3@o2ib "
     "failed: rc = -16",
     {Kind::lustre, -1, "", Action::monitor}},
    {"Lustre: scratch-OST0003-osc-ffff8a0c3b2d5000: Connection to scratch-OST0003 (at 10.0.0.3@o2ib) was "
     "lost; in progress operations using this service will wait for recovery to complete",
     {Kind::lustre_conn, -1, "scratch-OST0003", Action::monitor}},
    // InfiniBand and Ethernet
    // A module event is not a fault by itself (a link-down signal decides): monitored.
    {"mlx5_core 0000:1a:00.0: Port module event: module 1, Cable unplugged",
     {Kind::ib_port, 1, "0000:1a:00.0", Action::monitor}},
    {"mlx5_core 0000:1a:00.0: Port module event[error]: module 0, Cable error, High Temperature",
     {Kind::ib_port, 0, "0000:1a:00.0", Action::monitor}},
    // The GPU fell off the bus, in the driver's own words (NVSentinel #155; gpud 5014ca5).
    {"[6781741.548783] NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.",
     {Kind::gpu_off_bus, -1, "0000:91:00.0", Action::reboot_node, {}, true}},
    // mlx5 command timeouts (openucx/ucx #7738; an OpenShift troubleshooting page).
    {"[ 2710.157384] mlx5_core 0000:0b:06.0: wait_func:1133:(pid 97972): ENABLE_HCA(0x104) timeout. Will cause a "
     "leak of a command resource",
     {Kind::mlx5_cmd_timeout, 0x104, "0000:0b:06.0", Action::drain, "ENABLE_HCA(0x104)"}},
    {"mlx5_core 0000:18:00.0: wait_func:1155:(pid 1967079): TEARDOWN_HCA(0x103) timeout. Will cause a leak of a "
     "command resource",
     {Kind::mlx5_cmd_timeout, 0x103, "0000:18:00.0", Action::drain, "TEARDOWN_HCA(0x103)"}},
    // mlx5 health syndromes and fatal sensors (netdev 2020, qemu-devel 2025: real dumps).
    {"[  131.207065] mlx5_core 0000:41:00.0: print_health_info:421:(pid 0): synd 0x10: High temperature",
     {Kind::mlx5_fatal, 0x10, "0000:41:00.0", Action::drain, "High temperature", true}},
    {"[  445.937314] mlx5_core 0000:0d:00.0: print_health_info:447:(pid 0): synd 0x1: firmware internal error",
     {Kind::mlx5_fatal, 0x1, "0000:0d:00.0", Action::reboot_node, "firmware internal error", true}},
    {"[  204.791017] mlx5_core 0000:41:00.0: poll_health:478:(pid 0): Fatal error 1 detected",
     {Kind::mlx5_fatal, -1, "0000:41:00.0", Action::reboot_node, "Fatal error 1", true}},
    // drivers/net/ethernet/mellanox/mlx5/core/health.c hw_err_str(): 0x8 (from the format string).
    {"mlx5_core 0000:3b:00.0: print_health_info:421:(pid 0): synd 0x8: unrecoverable hardware error",
     {Kind::mlx5_fatal, 0x8, "0000:3b:00.0", Action::replace, "unrecoverable hardware error", true}},
    // EFA admin queue (drivers/infiniband/hw/efa/efa_com.c format strings; efa_main.c reset).
    {"efa 0000:00:06.0 rdmap0s6: Wait for completion (polling) timeout",
     {Kind::efa_admin, -1, "0000:00:06.0", Action::drain, "Wait for completion (polling) timeout"}},
    {"efa 0000:00:06.0 efa_0: Reset indication didn't turn off",
     {Kind::efa_admin, -1, "0000:00:06.0", Action::drain, "Reset indication didn't turn off"}},
    {"infiniband efa_0: Admin queue is closed", {Kind::efa_admin, -1, "efa_0", Action::drain, "Admin queue is closed"}},
    {"infiniband rdmap16s27: The device didn't send any completion for admin cmd REG_MR(7) status 0",
     {Kind::efa_admin, -1, "rdmap16s27", Action::drain, "didn't send any completion for admin cmd"}},
    // cb_timeout_handler's form (drivers/net/ethernet/mellanox/mlx5/core/cmd.c): "Async, timeout".
    {"mlx5_core 0000:1a:00.0: cb_timeout_handler:1010:(pid 2345): cmd[5]: ACCESS_REG(0x805) Async, timeout. Will "
     "cause a leak of a command resource",
     {Kind::mlx5_cmd_timeout, 0x805, "0000:1a:00.0", Action::drain, "ACCESS_REG(0x805)"}},
    // NVSentinel's form without wait_func.
    {"mlx5_core 0000:3b:00.0: ENABLE_HCA(0x104) timeout. Will cause a leak of a command resource",
     {Kind::mlx5_cmd_timeout, 0x104, "0000:3b:00.0", Action::drain, "ENABLE_HCA(0x104)"}},
    {"efa 0000:00:06.0: Device isn't ready, abort com init",
     {Kind::efa_admin, -1, "0000:00:06.0", Action::drain, "Device isn't ready"}},
    {"mlx5_core 0000:1a:00.0: poll_health:815:(pid 0): device's health compromised - reached miss count",
     {Kind::ib_health, -1, "0000:1a:00.0", Action::drain, {}, true}},
    {"ib0: lost carrier", {Kind::net_carrier, -1, "ib0", Action::drain}},
    {"ixgbe 0000:01:00.0 eth0: NIC Link is Down", {Kind::net_carrier, -1, "eth0", Action::drain}},
    {"bnxt_en 0000:41:00.0 enp65s0f0np0: NIC Link is Down",
     {Kind::net_carrier, -1, "enp65s0f0np0", Action::drain}},
    {"ixgbe 0000:01:00.0 eth0: NIC Link is Up 10 Gbps, Flow Control: RX/TX",
     {Kind::net_link_up, -1, "eth0", Action::ignore}},
    // Memory pressure and netfilter
    {"Out of memory: Killed process 4242 (python3) total-vm:81234567kB, anon-rss:7654321kB, file-rss:0kB, "
     "shmem-rss:0kB, UID:1000 pgtables:16000kB oom_score_adj:0",
     {Kind::oom, 4242, "", Action::drain, "python3", true}},
    {"Memory cgroup out of memory: Killed process 777 (train.py) total-vm:1000kB, anon-rss:900kB, "
     "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:64kB oom_score_adj:0",
     {Kind::oom_memcg, 777, "", Action::monitor, "train.py"}},
    {"nf_conntrack: nf_conntrack: table full, dropping packet", {Kind::conntrack, -1, "", Action::monitor}},
    // Issue 37: node faults that are not the GPU, one real line a kind (tests/golden/node_faults/README.md
    // names each one's source; its golden test reads every line of that corpus).
    {"EXT4-fs (sda2): Remounting filesystem read-only", {Kind::fs_readonly, -1, "sda2", Action::drain, {}, true}},
    {"kworker/u203:1: attempt to access beyond end of device", {Kind::block_eod, -1, "", Action::drain}},
    {"md/raid:md1: Disk failure on sde1, disabling device.", {Kind::md_degraded, -1, "sde1", Action::monitor, "md1"}},
    {"md/raid0md0: Disk failure on nvme0n1p1 detected, failing array.",
     {Kind::md_failed, -1, "nvme0n1p1", Action::drain, "md0", true}},
    {"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-ec9e,mems_allowed=0,"
     "oom_memcg=/kubepods/burstable/pod1,task_memcg=/kubepods/burstable/pod1/ec9e,task=pt_main_thread,pid=461754,uid=0",
     {Kind::oom_memcg, 461754, "", Action::monitor, "/kubepods/burstable/pod1/ec9e"}},
    {"Kernel panic - not syncing: hung_task: blocked tasks",
     {Kind::kernel_panic, -1, "", Action::reboot_node, "hung_task: blocked tasks", true}},
    {"Oops: 0002 [#1] SMP", {Kind::kernel_oops, -1, "", Action::reboot_node, "Oops", true}},
    {"NFS: __nfs4_reclaim_open_state: Lock reclaim failed!",
     {Kind::nfs_state, -1, "", Action::restart_app, "Lock reclaim failed"}},
    {" nfs_wb_all+0x22/0x120 [nfs]", {Kind::nfs_writeback, -1, "", Action::drain, "nfs_wb_all"}},
    {"nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing",
     {Kind::peermem, -1, "", Action::monitor, "nvidia-peermem"}},
    {"pt_main_thread[2536443]: segfault at 7f797fe00000 ip 00007f7c7ac69996 sp 00007f7c12fd7c30 error 4 in "
     "libnccl.so.2[7f7c7ac00000+d7e2000]",
     {Kind::gpu_lib_segfault, -1, "libnccl.so.2", Action::restart_app, "pt_main_thread"}},
    {"mlx5_core 0000:5c:00.0: mlx5_pcie_event:299:(pid 268269): Detected insufficient power on the PCIe slot (27W).",
     {Kind::mlx5_pcie_power, 27, "0000:5c:00.0", Action::monitor}},
    {"mlx5_core 0000:04:00.0: mlx5_cmd_check:756:(pid 12450): ACCESS_REG(0x805) op_mod(0x1) failed, status bad "
     "parameter(0x3), syndrome (0x1e5585)",
     {Kind::mlx5_cmd_err, 0x805, "0000:04:00.0", Action::monitor, "ACCESS_REG(0x805)"}},
    {"NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!",
     {Kind::nvlink_training, -1, "", Action::reboot_node, "knvlinkDiscoverPostRxDetLinks_GH100", true}},
    {"VFS: file-max limit 1000000 reached", {Kind::file_max, 1000000, "", Action::monitor}},
    {"Memory failure: 0x7e025e: Sending SIGBUS to einj_mem_uc:12283 due to hardware memory corruption",
     {Kind::memory_failure, -1, "", Action::drain, "einj_mem_uc:12283", true}},
};

// Real kernel lines of kinds the engine has, which it misses or misreads today.
const std::vector<KindRow> kRealLinesMissed = {
    // fs/xfs/xfs_error.c xfs_buf_verifier_error: "Metadata %s detected at %pS, %s block 0x%llx %s",
    // %s = "corruption" or "CRC error": the most common XFS damage report.
    {"XFS (sda1): Metadata corruption detected at xfs_agf_read_verify+0x10e/0x130 [xfs], xfs_agf block 0x1",
     {Kind::fs_error, -1, "sda1", Action::drain}},
    {"XFS (sda1): Metadata CRC error detected at xfs_agf_read_verify+0x10e/0x130 [xfs], xfs_agf block 0x1",
     {Kind::fs_error, -1, "sda1", Action::drain}},
    // block/blk-core.c blk_print_req_error: "%s error, dev %s, sector ..." where %s is "I/O" only
    // for BLK_STS_IOERR; a failing disk reports BLK_STS_MEDIUM as "critical medium".
    {"critical medium error, dev sda, sector 123456 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0",
     {Kind::block_io, -1, "sda", Action::drain}},
    {"critical target error, dev sdc, sector 8 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 0",
     {Kind::block_io, -1, "sdc", Action::drain}},
    // drivers/net/ethernet/intel/igb: netdev_info(netdev, "igb: %s NIC Link is Down\n", ...): the
    // interface is the word before "NIC", not before the last colon ("igb").
    {"igb 0000:01:00.0 eno1: igb: eno1 NIC Link is Down", {Kind::net_carrier, -1, "eno1", Action::drain}},
};

// Lines that look like signals and are not: they must not classify.
constexpr std::string_view kNearMisses[] = {
    // Issue 37: the same subsystems' healthy lines (tests/golden/node_faults/*.benign.txt).
    "EXT4-fs (nvme0n1p5): re-mounted. Opts: errors=remount-ro. Quota mode: none.",
    "EXT4-fs (dm-0): re-mounted 0ac8319e-1803-4a69-887d-6e3e99ceb4f7 r/w. Quota mode: none.",
    "md/raid1:md0: active with 2 out of 2 mirrors",
    "md: md0: resync done.",
    "oom_reaper: reaped process 63214 (uwsgi), now anon-rss:0kB, file-rss:0kB, shmem-rss:92kB",
    "init (1): /proc/1/oom_adj is deprecated, please use /proc/1/oom_score_adj instead.",
    "NMI watchdog: Enabled. Permanently consumes one hw-PMU counter.",
    "sysrq: Show Blocked State",
    "Compositor[3329]: segfault at 1044 ip 00007f2062aa9046 sp 00007f2051bd2280 error 4 in chrome[7f2060fa7000+9bd4000]",
    "mlx5_core 0000:81:00.0: mlx5_pcie_event:301:(pid 10): PCIe slot advertised sufficient power (27W).",
    "nvidia-nvlink: Nvlink Core is being initialized, major device number 234",
    "mce: CPU supports 7 MCE banks",
    "mce: [Hardware Error]: TSC 0 ADDR fef4c9e0 ",
    "BTRFS info (device sda): disk space caching is enabled",
    "Kernel command line: BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
    "NVRM: GPU at PCI:0000:3b:00: GPU-5f2e1a7c-0d5e-4c6a-9d0b-6a1f3c2e7b11",
    "NVRM: Xid (PCI:0000:3b:00): not a number",
    "EDAC MC: Ver: 3.0.0",
    "EDAC MC0: Giving out device to module skx_edac controller Skylake Socket#0 IMC#0: DEV 0000:2e:0a.0 "
    "(INTERRUPT)",
    "XFS (sda1): Mounting V5 Filesystem 5b2e9f3c-0d5e-4c6a-9d0b-6a1f3c2e7b11",
    "XFS (sda1): Ending clean mount",
    "EXT4-fs (sda1): mounted filesystem with ordered data mode. Quota mode: none.",
    "mlx5_core 0000:1a:00.0: Port module event: module 1, Cable plugged",
    "mlx5_core 0000:1a:00.0: E-Switch: Total vports 2, per vport: max uc(128) max mc(2048)",
    "nvme nvme0: 8/0/0 default/read/poll queues",
    "nvme nvme0: pci function 0000:01:00.0",
    "pcieport 0000:00:01.0: AER: enabled with IRQ 120",
    "Lustre: Lustre: Build Version: 2.15.3",
    "NMI watchdog: Enabled. Permanently consumes one hw-PMU counter.",
    "IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready",
    "ACPI Error: AE_NOT_FOUND, While resolving a named reference package element - LOCL (20210730/dspkginit-438)",
    "mce: CPU0: Thermal monitoring enabled (TM1)",
    "",
};

}  // namespace

TEST(ClassifyGolden, EveryLineOfTheSharedExamples) {
  auto path = cmax::test::shared_data_dir() / "xid" / "kernel_log_examples.txt";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing";
  auto lines = golden_lines();
  ASSERT_EQ(lines.size(), kGolden.size()) << "the table needs a row for every line of " << path;
  for (const auto& row : kGolden) {
    SCOPED_TRACE("line " + std::to_string(row.line));
    ASSERT_LE(static_cast<std::size_t>(row.line), lines.size());
    expect_signal(lines[row.line - 1], row.want);
  }
}

TEST(ClassifyGolden, PrefixesDoNotChangeTheSignal) {
  // The same Xid behind every prefix form classifies the same.
  std::string_view msg = "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";
  for (std::string_view prefix : {"", "[ 130.456250] ", "[ 130.456250] [ T1946] ", "[Sat Oct 12 18:35:32 2024] ",
                                  "Nov 22 14:56:47 gpu-07 kernel: [ 130.4] ", "Nov  2 04:05:06 gpu-07 kernel: ",
                                  "2024-11-22T14:56:47+0000 gpu-07 kernel: ", "0: [ 5.1] ", "12: ", "[3] ",
                                  "[1,0]<stdout>: ", "11,386,2400315688,-;"}) {
    expect_signal(std::string(prefix) + std::string(msg),
                  {Kind::xid, 79, "0000:3b:00", Action::reboot_node, kUnknown});
  }
}

TEST(ClassifyFormats, EveryKind) {
  bool seen[kKindCount] = {};
  for (const auto& row : kKinds) {
    expect_signal(row.line, row.want);
    seen[static_cast<int>(row.want.kind)] = true;
  }
  for (int k = 0; k < kLineKindCount; ++k)
    EXPECT_TRUE(seen[k]) << "no line in the table for kind " << to_string(static_cast<Kind>(k));
}

TEST(ClassifyFormats, NearMissesDoNotClassify) {
  for (std::string_view line : kNearMisses) {
    auto sig = classify(line);
    EXPECT_FALSE(sig.has_value()) << "classified as " << to_string(sig->kind) << ": " << line;
  }
}

// drivers/nvme/host/core.c logs "Shutdown timeout set to %u seconds" at every probe of a drive
// whose RTD3 entry latency exceeds the default: a boot message, not a timeout.
TEST(ClassifyFormats, NvmeShutdownTimeoutNoticeIsNotAFault) {
  for (std::string_view line : {"nvme nvme0: Shutdown timeout set to 10 seconds",
                                "nvme nvme3: Shutdown timeout set to 8 seconds"}) {
    auto sig = classify(line);
    EXPECT_FALSE(sig.has_value()) << "classified as " << to_string(sig->kind) << " (action "
                                  << to_string(catalog().action_for(*sig)) << "): " << line;
  }
}

TEST(ClassifyFormats, RealLinesOfKnownKinds) {
  for (const auto& row : kRealLinesMissed) expect_signal(row.line, row.want);
}

TEST(ClassifyFormats, PciHelpers) {
  EXPECT_TRUE(is_pci("0000:3b:00"));
  EXPECT_TRUE(is_pci("0000:3b:00.0"));
  EXPECT_TRUE(is_pci("000f:01:00.7"));
  EXPECT_FALSE(is_pci("0000:3b:0"));
  EXPECT_FALSE(is_pci("0000:3b:00.10"));
  EXPECT_FALSE(is_pci("nvme0"));
  EXPECT_FALSE(is_pci(""));
  EXPECT_FALSE(is_pci("zzzz:3b:00"));
  EXPECT_EQ(pci_without_function("0000:3b:00.0"), "0000:3b:00");
  EXPECT_EQ(pci_without_function("0000:3b:00"), "0000:3b:00");
  EXPECT_EQ(pci_without_function(""), "");
}

// The prefilter only hands classify() lines holding an anchor literal: a line classify() knows
// without one is never seen in a scan.
TEST(PrefilterCoverage, EveryRecognisedLineHoldsAnAnchor) {
  std::vector<std::string> lines = golden_lines();
  for (const auto& row : kKinds) lines.emplace_back(row.line);
  for (const auto& row : kRealLinesMissed) lines.emplace_back(row.line);
  std::size_t recognised = 0;
  for (const auto& line : lines) {
    std::string_view message = message_of(line);
    bool expected = false;
    for (const auto& row : kRealLinesMissed) expected |= row.line == line;
    if (!classify(message) && !expected) continue;
    ++recognised;
    EXPECT_TRUE(has_anchor(message)) << "the prefilter would skip: " << line;
  }
  EXPECT_GE(recognised, kKinds.size());
}
