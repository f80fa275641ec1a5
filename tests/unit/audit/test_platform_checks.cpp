// The checks issue 23 adds for what the ClusterMAX CLI grades and cmax did not: each outcome on a
// host tree made of real-format files (tests/data/audit, with their sources in SOURCES.md), run
// through the same collectors and check table as the live audit. Where the evidence is a command
// cmax only runs on the live host (mlxconfig, virtnet, nvidia-smi boost-slider), its real output
// goes through the parser and the predicate gets the facts the collector would make of it.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "audit/audit.h"
#include "audit/parse/platform.h"
#include "support/temp_host.h"

using namespace cmax::audit;
using cmax::test::TempHost;

namespace {

std::filesystem::path data(std::string_view rel) {
  return std::filesystem::path(CMAX_SOURCE_DIR) / "tests" / "data" / "audit" / rel;
}

std::string read_data(std::string_view rel) {
  std::ifstream in(data(rel));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, Finding> audit_of(const TempHost& t, Harness h = kStandalone) {
  AuditOptions o;
  o.host_root = t.dir().string();
  o.path_env = std::string();
  o.harness = h;
  auto r = run_audit(o);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  std::map<std::string, Finding> out;
  if (r)
    for (auto& f : r->findings) out[f.check_id] = f;
  return out;
}

void nvidia_gpus(TempHost& t, int n, std::string_view model, std::string_view driver_line = {}) {
  for (int i = 0; i < n; ++i) {
    std::string bdf = "0000:" + std::to_string(10 + i) + ":00.0";
    t.write("/sys/bus/pci/devices/" + bdf + "/vendor", "0x10de\n");
    t.write("/sys/bus/pci/devices/" + bdf + "/class", "0x030200\n");
    t.write("/sys/bus/pci/devices/" + bdf + "/device", "0x2330\n");
    t.write("/proc/driver/nvidia/gpus/" + bdf + "/information",
            "Model: \t\t " + std::string(model) + "\nIRQ:   \t\t 180\nVideo BIOS: \t 96.00.74.00.01\nBus Type: \t PCIe\n");
  }
  t.write("/proc/driver/nvidia/version",
          driver_line.empty() ? std::string_view("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.03  "
                                                 "Release Build  (dvs-builder@U22-I3-AF03-09-1)  Wed May 13 01:25:25 UTC 2026\n")
                              : driver_line);
}

Outcome outcome(const std::map<std::string, Finding>& m, const std::string& id) {
  auto it = m.find(id);
  EXPECT_NE(it, m.end()) << id;
  return it == m.end() ? Outcome::unverified : it->second.outcome;
}

}  // namespace

// --- Januscape: nested virtualisation handed to a guest -------------------------------------

TEST(NestedKvm, AKvmGuestWithVmxDevKvmAndNestedOnWarnsThatTheHostMustAttestItsFix) {
  TempHost t;
  t.copy_from(data("virt/proc_cpuinfo_flags_kvm_guest_intel_vmx_nested_hypervisor.txt"), "/proc/cpuinfo");
  t.write("/sys/class/dmi/id/sys_vendor", "QEMU\n");
  t.write("/dev/kvm", "");
  t.copy_from(data("virt/sys_module_kvm_intel_parameters_nested_Y.txt"), "/sys/module/kvm_intel/parameters/nested");
  auto m = audit_of(t);
  const auto& f = m.at("security.virt.nested_kvm");
  EXPECT_EQ(f.outcome, Outcome::warn) << f.reason;
  EXPECT_NE(f.reason.find("CVE-2026-53359"), std::string::npos);
  EXPECT_NE(f.reason.find("attest"), std::string::npos);
}

TEST(NestedKvm, NestedOffOrNoVirtFlagsPassBareMetalIsNotApplicableAndAnUnreadableParameterIsUnverified) {
  {
    TempHost t;  // nested=N
    t.copy_from(data("virt/proc_cpuinfo_flags_kvm_guest_intel_vmx_nested_hypervisor.txt"), "/proc/cpuinfo");
    t.write("/sys/class/dmi/id/sys_vendor", "QEMU\n");
    t.write("/dev/kvm", "");
    t.copy_from(data("virt/sys_module_kvm_intel_parameters_nested_N.txt"), "/sys/module/kvm_intel/parameters/nested");
    EXPECT_EQ(outcome(audit_of(t), "security.virt.nested_kvm"), Outcome::pass);
  }
  {
    TempHost t;  // an AMD guest whose CPU model hides svm
    t.copy_from(data("virt/proc_cpuinfo_kvm_guest_amd_no_svm_hypervisor.txt"), "/proc/cpuinfo");
    t.write("/sys/class/dmi/id/sys_vendor", "QEMU\n");
    EXPECT_EQ(outcome(audit_of(t), "security.virt.nested_kvm"), Outcome::pass);
  }
  {
    TempHost t;  // bare-metal EPYC with svm and its own /dev/kvm
    t.copy_from(data("virt/proc_cpuinfo_flags_baremetal_amd_svm_no_hypervisor_trimmed.txt"), "/proc/cpuinfo");
    t.write("/sys/class/dmi/id/sys_vendor", "Supermicro\n");
    t.write("/dev/kvm", "");
    t.copy_from(data("virt/sys_module_kvm_amd_parameters_nested_1.txt"), "/sys/module/kvm_amd/parameters/nested");
    EXPECT_EQ(outcome(audit_of(t), "security.virt.nested_kvm"), Outcome::not_applicable);
  }
  {
    TempHost t;  // vmx and /dev/kvm in a guest, no KVM module parameters to read
    t.copy_from(data("virt/proc_cpuinfo_flags_kvm_guest_intel_vmx_nested_hypervisor.txt"), "/proc/cpuinfo");
    t.write("/sys/class/dmi/id/sys_vendor", "QEMU\n");
    t.write("/dev/kvm", "");
    EXPECT_EQ(outcome(audit_of(t), "security.virt.nested_kvm"), Outcome::unverified);
  }
}

// --- Nsight Compute and GPU counters ----------------------------------------------------------

TEST(NsightCompute, PresentPassesMissingWarnsAndCountersFollowRmProfilingAdminOnly) {
  TempHost t;
  nvidia_gpus(t, 8, "NVIDIA H100 80GB HBM3");
  t.copy_from(data("ncu/proc_driver_nvidia_params_grep_RmProfilingAdminOnly_1.txt"), "/proc/driver/nvidia/params");
  auto m = audit_of(t);
  EXPECT_EQ(outcome(m, "monitoring.ncu.present"), Outcome::warn);
  EXPECT_EQ(outcome(m, "monitoring.gpu_counters.users"), Outcome::warn);
  EXPECT_NE(m.at("monitoring.gpu_counters.users").reason.find("ERR_NVGPUCTRPERM"), std::string::npos);

  t.write("/opt/nvidia/nsight-compute/2025.1.1/ncu", "#!/bin/sh\n");
  t.copy_from(data("ncu/proc_driver_nvidia_params_grep_RmProfilingAdminOnly_0.txt"), "/proc/driver/nvidia/params");
  m = audit_of(t);
  EXPECT_EQ(outcome(m, "monitoring.ncu.present"), Outcome::pass);
  EXPECT_EQ(outcome(m, "monitoring.gpu_counters.users"), Outcome::pass);
}

TEST(NsightCompute, WithoutLiveParametersTheModprobeOptionDecides) {
  TempHost t;
  nvidia_gpus(t, 1, "NVIDIA H100 80GB HBM3");
  t.write("/proc/driver/nvidia/params", "ResmanDebugLevel: 4294967295\n");  // driver without the key
  t.copy_from(data("ncu/modprobe_d_nvidia_profiling.conf"), "/etc/modprobe.d/nvidia-profiling.conf");
  auto m = audit_of(t);
  EXPECT_EQ(outcome(m, "monitoring.gpu_counters.users"), Outcome::pass) << m.at("monitoring.gpu_counters.users").reason;
  t.write("/etc/modprobe.d/nvidia-profiling.conf", "");
  EXPECT_EQ(outcome(audit_of(t), "monitoring.gpu_counters.users"), Outcome::warn);
}

// --- perf for the running kernel ----------------------------------------------------------------

TEST(Perf, UbuntusWrapperWithoutTheRunningKernelsBinaryIsNotPerf) {
  TempHost t;
  t.write("/proc/sys/kernel/osrelease", "6.8.0-48-generic\n");
  // The wrapper linux-tools-common installs (the lines that matter for cmax).
  t.write("/usr/bin/perf",
          "#!/bin/bash\nfull_version=`uname -r`\n# First check for a fully qualified version.\n"
          "this=\"/usr/lib/linux-tools/$full_version/`basename $0`\"\nif [ -f \"$this\" ]; then\n\texec \"$this\" \"$@\"\nfi\n"
          "echo \"WARNING: perf not found for kernel $version\" >&2\nexit 2\n");
  auto m = audit_of(t);
  EXPECT_EQ(outcome(m, "monitoring.perf.present"), Outcome::warn);
  EXPECT_NE(m.at("monitoring.perf.present").reason.find("6.8.0-48-generic"), std::string::npos);
  t.write("/usr/lib/linux-tools/6.8.0-48-generic/perf", "\x7f" "ELF");
  EXPECT_EQ(outcome(audit_of(t), "monitoring.perf.present"), Outcome::pass);
}

TEST(Perf, AnExecutableIsPerfAndNoneIsAWarn) {
  TempHost t;
  t.write("/proc/sys/kernel/osrelease", "6.1.0-28-amd64\n");
  EXPECT_EQ(outcome(audit_of(t), "monitoring.perf.present"), Outcome::warn);
  t.write("/usr/bin/perf", std::string("\x7f" "ELF\x02\x01\x01", 7));
  EXPECT_EQ(outcome(audit_of(t), "monitoring.perf.present"), Outcome::pass);
}

// --- NCCL and GDRCopy libraries ------------------------------------------------------------------

TEST(NcclLibrary, TheRealFileNamesItsVersionElseTheLibnccl2Package) {
  TempHost t;
  nvidia_gpus(t, 8, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(outcome(audit_of(t), "networking.nccl.library"), Outcome::warn);
  t.write("/usr/lib/x86_64-linux-gnu/libnccl.so.2", "");
  t.write("/var/lib/dpkg/status",
          "Package: libnccl2\nStatus: install ok installed\nVersion: 2.22.3-1+cuda12.2\n\n");
  auto m = audit_of(t);
  EXPECT_EQ(outcome(m, "networking.nccl.library"), Outcome::pass);
  EXPECT_NE(m.at("networking.nccl.library").observed.find("2.22.3"), std::string::npos);
  t.write("/usr/lib/x86_64-linux-gnu/libnccl.so.2.26.5", "");
  m = audit_of(t);
  EXPECT_NE(m.at("networking.nccl.library").observed.find("2.26.5"), std::string::npos);
}

TEST(GdrCopy, LibraryModuleAndDeviceTogetherPassAndAPartialInstallSaysWhatIsMissing) {
  TempHost t;
  nvidia_gpus(t, 8, "NVIDIA H100 80GB HBM3");
  t.write("/proc/modules", "nvidia 34037760 19 nvidia_uvm,nv_peer_mem,gdrdrv,nvidia_modeset, Live 0x0000000000000000 (POE)\n");
  auto m = audit_of(t);
  EXPECT_EQ(outcome(m, "networking.gdrcopy"), Outcome::warn);
  EXPECT_NE(m.at("networking.gdrcopy").reason.find("not installed"), std::string::npos);
  t.write("/usr/local/lib/libgdrapi.so.2.4", "");
  m = audit_of(t);
  EXPECT_EQ(outcome(m, "networking.gdrcopy"), Outcome::warn);
  EXPECT_NE(m.at("networking.gdrcopy").reason.find("partly installed"), std::string::npos);
  t.write("/proc/modules",
          "gdrdrv 24576 0 - Live 0x0000000000000000 (OE)\n"
          "nvidia 34037760 19 nvidia_uvm,nv_peer_mem,gdrdrv,nvidia_modeset, Live 0x0000000000000000 (POE)\n");
  t.write("/dev/gdrdrv", "");
  EXPECT_EQ(outcome(audit_of(t), "networking.gdrcopy"), Outcome::pass);
}

// --- Kubernetes node: the kubelet's CPU manager ------------------------------------------------------

TEST(KubeletCpuManager, StaticPassesNoneWarnsAndWithoutAKubeletItIsNotApplicable) {
  TempHost t;
  EXPECT_EQ(outcome(audit_of(t, kKubernetes), "orchestration.kubelet.cpu_manager"), Outcome::not_applicable);
  t.copy_from(data("kubelet/cpu_manager_state_none.json"), "/var/lib/kubelet/cpu_manager_state");
  EXPECT_EQ(outcome(audit_of(t, kKubernetes), "orchestration.kubelet.cpu_manager"), Outcome::warn);
  t.copy_from(data("kubelet/cpu_manager_state_static_with_entries.json"), "/var/lib/kubelet/cpu_manager_state");
  EXPECT_EQ(outcome(audit_of(t, kKubernetes), "orchestration.kubelet.cpu_manager"), Outcome::pass);
  t.write("/var/lib/kubelet/cpu_manager_state", "{\"checksum\": 1}");
  EXPECT_EQ(outcome(audit_of(t, kKubernetes), "orchestration.kubelet.cpu_manager"), Outcome::unverified);
}

TEST(KubeletCpuManager, BeforeTheFirstCheckpointTheKubeletConfigSays) {
  TempHost t;
  t.copy_from(data("kubelet/kubelet_config_cpumanager_static_snippet.yaml"), "/var/lib/kubelet/config.yaml");
  EXPECT_EQ(outcome(audit_of(t, kKubernetes), "orchestration.kubelet.cpu_manager"), Outcome::pass);
  t.write("/var/lib/kubelet/config.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n");
  EXPECT_EQ(outcome(audit_of(t, kKubernetes), "orchestration.kubelet.cpu_manager"), Outcome::warn);
}

// --- Grace: coherent HBM as system memory (CDMM) ----------------------------------------------------

namespace {
void gh200_numa(TempHost& t, bool hbm_online) {
  // node0: 72 Grace cores and LPDDR5X; nodes 1-8 CPU-less: HBM of one GPU (as lscpu on a GH200 shows).
  t.write("/sys/devices/system/node/node0/cpulist", "0-71\n");
  t.write("/sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       503312384 kB\nNode 0 MemFree:        400000000 kB\n");
  if (!hbm_online) return;
  t.write("/sys/devices/system/node/node1/cpulist", "\n");
  t.write("/sys/devices/system/node/node1/meminfo", "Node 1 MemTotal:       100663296 kB\n");
  for (int n = 2; n <= 8; ++n) {
    t.write("/sys/devices/system/node/node" + std::to_string(n) + "/cpulist", "\n");
    t.write("/sys/devices/system/node/node" + std::to_string(n) + "/meminfo",
            "Node " + std::to_string(n) + " MemTotal:              0 kB\n");
  }
}
}  // namespace

TEST(CoherentMemory, Gh200HbmOnlineAsANumaNodeWarnsAndCdmmPasses) {
  TempHost t;
  nvidia_gpus(t, 1, "NVIDIA GH200 480GB");
  gh200_numa(t, true);
  t.copy_from(data("grace/proc_driver_nvidia_params_sorted_coherent_mode_empty_trimmed.txt"), "/proc/driver/nvidia/params");
  auto m = audit_of(t);
  EXPECT_EQ(outcome(m, "orchestration.gpu.coherent_memory"), Outcome::warn);
  EXPECT_NE(m.at("orchestration.gpu.coherent_memory").reason.find("node1"), std::string::npos);

  TempHost c;
  nvidia_gpus(c, 1, "NVIDIA GH200 480GB");
  gh200_numa(c, false);
  c.write("/proc/driver/nvidia/params", "CoherentGPUMemoryMode: \"driver\"\n");
  EXPECT_EQ(outcome(audit_of(c), "orchestration.gpu.coherent_memory"), Outcome::pass);

  TempHost h;
  nvidia_gpus(h, 8, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(outcome(audit_of(h), "orchestration.gpu.coherent_memory"), Outcome::not_applicable);
}

// --- Arm SMMU CMDQV in a Grace guest ------------------------------------------------------------------

TEST(SmmuCmdqv, AGraceGuestWithoutCmdqvWarnsAndWithItPasses) {
  TempHost t;
  t.write("/proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 "
                           "atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve\n"
                           "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\n");
  t.write("/sys/class/dmi/id/sys_vendor", "QEMU\n");
  t.write("/sys/class/dmi/id/product_name", "KVM Virtual Machine\n");
  nvidia_gpus(t, 1, "NVIDIA GH200 480GB");
  t.mkdir("/sys/class/iommu/smmu3.0x0000000009050000");
  auto m = audit_of(t);
  EXPECT_EQ(outcome(m, "networking.arm_smmu.cmdqv"), Outcome::warn) << m.at("networking.arm_smmu.cmdqv").reason;
  t.mkdir("/sys/devices/platform/NVDA200C:00");
  t.symlink("../../../../devices/platform/NVDA200C:00", "/sys/bus/platform/drivers/tegra241-cmdqv/NVDA200C:00");
  EXPECT_EQ(outcome(audit_of(t), "networking.arm_smmu.cmdqv"), Outcome::pass);
}

TEST(SmmuCmdqv, X86IsNotApplicableAndAnUnidentifiedArmGuestIsUnverified) {
  TempHost x;
  x.copy_from(data("virt/proc_cpuinfo_kvm_guest_amd_no_svm_hypervisor.txt"), "/proc/cpuinfo");
  EXPECT_EQ(outcome(audit_of(x), "networking.arm_smmu.cmdqv"), Outcome::not_applicable);
  TempHost a;
  a.write("/proc/cpuinfo", "processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU architecture: 8\n");
  a.write("/sys/class/dmi/id/sys_vendor", "QEMU\n");
  a.mkdir("/sys/class/iommu/smmu3.0x0000000009050000");
  EXPECT_EQ(outcome(audit_of(a), "networking.arm_smmu.cmdqv"), Outcome::unverified);
}

// --- BlueField: RShim, the VIRTIO-Net controller ------------------------------------------------------

TEST(BlueField, RshimOnTheHostWarnsAndAModeCmaxCannotReadLeavesTheControllerUnverified) {
  TempHost t;
  // Two BlueField-3 PFs (15b3:a2dc, lspci class 0200) and the RShim device the host sees.
  for (const char* bdf : {"0000:03:00.0", "0000:03:00.1"}) {
    t.write(std::string("/sys/bus/pci/devices/") + bdf + "/vendor", "0x15b3\n");
    t.write(std::string("/sys/bus/pci/devices/") + bdf + "/device", "0xa2dc\n");
    t.write(std::string("/sys/bus/pci/devices/") + bdf + "/class", "0x020000\n");
  }
  t.mkdir("/dev/rshim0");
  t.mkdir("/sys/class/net/tmfifo_net0");
  auto m = audit_of(t);
  EXPECT_EQ(outcome(m, "security.bluefield.rshim"), Outcome::warn);
  EXPECT_EQ(outcome(m, "security.bluefield.virtio_net"), Outcome::unverified);
  EXPECT_NE(m.at("security.bluefield.virtio_net").reason.find("virtnet version"), std::string::npos);
  TempHost none;
  EXPECT_EQ(outcome(audit_of(none), "security.bluefield.virtio_net"), Outcome::not_applicable);
}

TEST(BlueField, ModeAndControllerVersionFromTheirRealOutputsDecideTheFloor) {
  // mlxconfig's DPU and NIC settings as NVIDIA's mode-switch script compares them.
  auto dpu = parse_mlxconfig_query(
      "Device #1:\n----------\n\nDevice type:    BlueField3\n\nConfigurations:                              Next Boot\n"
      "         INTERNAL_CPU_MODEL                  EMBEDDED_CPU(1)\n"
      "         INTERNAL_CPU_OFFLOAD_ENGINE         ENABLED(0)\n");
  ASSERT_TRUE(dpu.count("INTERNAL_CPU_MODEL"));
  EXPECT_EQ(dpu.at("INTERNAL_CPU_MODEL").label, "EMBEDDED_CPU");
  EXPECT_EQ(dpu.at("INTERNAL_CPU_OFFLOAD_ENGINE").number, 0);
  auto nic = parse_mlxconfig_query(
      "Configurations:                                      Default         Current         Next Boot\n"
      "*        INTERNAL_CPU_OFFLOAD_ENGINE                 ENABLED(0)      DISABLED(1)     DISABLED(1)\n");
  EXPECT_EQ(nic.at("INTERNAL_CPU_OFFLOAD_ENGINE").label, "DISABLED");

  EXPECT_EQ(parse_virtnet_running_version(read_data("bluefield/virtnet_version_v24.10_doc_flattened.txt")), "24.10.13");
  EXPECT_EQ(parse_virtnet_running_version(read_data("bluefield/virtnet_version_v1.9_doc_flattened.txt")), "1.9.13");
  EXPECT_EQ(parse_virtnet_running_version("[{\"Original Controller\": \"v25.10.6\"}, {\"Destination Controller\": \"v25.10.6\"}]"),
            "25.10.6");

  auto facts = [](std::string mode, std::string version) {
    Facts f;
    f.present("nic.bluefield", "0000:03:00.0=BlueField-3 0000:03:00.1=BlueField-3", "pci");
    f.present("dpu.mode", mode, "mlxconfig -e -d 0000:03:00.0 q");
    if (!version.empty()) f.present("dpu.virtnet.version", version, "virtnet version");
    else f.absent("dpu.virtnet.version", "virtnet", "not on the DPU");
    return f;
  };
  EXPECT_EQ(cmax::test::run_check_by_id("security.bluefield.virtio_net", facts("dpu", "24.10.13")).outcome, Outcome::fail);
  EXPECT_EQ(cmax::test::run_check_by_id("security.bluefield.virtio_net", facts("dpu", "1.9.13")).outcome, Outcome::fail);
  EXPECT_EQ(cmax::test::run_check_by_id("security.bluefield.virtio_net", facts("dpu", "24.10.50")).outcome, Outcome::pass);
  EXPECT_EQ(cmax::test::run_check_by_id("security.bluefield.virtio_net", facts("dpu", "26.4.1")).outcome, Outcome::pass);
  EXPECT_EQ(cmax::test::run_check_by_id("security.bluefield.virtio_net", facts("nic", "")).outcome, Outcome::warn);
  EXPECT_EQ(cmax::test::run_check_by_id("security.bluefield.virtio_net", facts("dpu", "")).outcome, Outcome::unverified);
}

// --- Attestations are never a pass ------------------------------------------------------------------

TEST(Attestations, WhatATenantCannotSeeIsUnverifiedWithWhatToAttest) {
  TempHost t;
  nvidia_gpus(t, 8, "NVIDIA H100 80GB HBM3");
  t.copy_from(data("virt/proc_cpuinfo_flags_kvm_guest_intel_vmx_nested_hypervisor.txt"), "/proc/cpuinfo");
  t.write("/sys/class/dmi/id/sys_vendor", "QEMU\n");
  for (const char* dev : {"mlx5_0", "mlx5_1"}) {
    t.write(std::string("/sys/class/infiniband/") + dev + "/fw_ver", "28.39.2048\n");
    t.write(std::string("/sys/class/infiniband/") + dev + "/ports/1/link_layer", "InfiniBand\n");
    t.write(std::string("/sys/class/infiniband/") + dev + "/ports/1/state", "4: ACTIVE\n");
    t.write(std::string("/sys/class/infiniband/") + dev + "/ports/1/phys_state", "5: LinkUp\n");
  }
  auto m = audit_of(t, kSlurm);
  for (const char* id : {"security.attest.ufm_secured_profile", "security.attest.pcie_passthrough", "security.attest.nvlink_domain"}) {
    EXPECT_EQ(outcome(m, id), Outcome::unverified) << id;
    EXPECT_NE(m.at(id).reason.find("attest"), std::string::npos) << id;
  }
  TempHost bare;
  bare.write("/proc/cpuinfo", "vendor_id\t: GenuineIntel\nflags\t\t: fpu vme lm vmx\n");
  auto b = audit_of(bare, kSlurm);
  EXPECT_EQ(outcome(b, "security.attest.pcie_passthrough"), Outcome::not_applicable);
  EXPECT_EQ(outcome(b, "security.attest.ufm_secured_profile"), Outcome::not_applicable);
  EXPECT_EQ(outcome(b, "security.attest.nvlink_domain"), Outcome::not_applicable);
}

// --- NIC firmware per adapter against the bulletin's trains ----------------------------------------

TEST(NicFirmware, EveryNvidiaAdapterIsJudgedAndTheWorstDecides) {
  TempHost t;
  auto adapter = [&](const char* dev, const char* fw, const char* vendor) {
    t.write(std::string("/sys/class/infiniband/") + dev + "/fw_ver", std::string(fw) + "\n");
    t.write(std::string("/sys/class/infiniband/") + dev + "/device/vendor", std::string(vendor) + "\n");
    t.write(std::string("/sys/class/infiniband/") + dev + "/ports/1/link_layer", "InfiniBand\n");
  };
  adapter("mlx5_0", "28.46.3008", "0x15b3");
  adapter("mlx5_1", "28.46.3008", "0x15b3");
  adapter("efa_0", "0.0.0.0", "0x1d0f");  // not NVIDIA's: never judged against its trains
  auto m = audit_of(t);
  EXPECT_EQ(outcome(m, "security.connectx_firmware.floor"), Outcome::pass) << m.at("security.connectx_firmware.floor").reason;
  adapter("mlx5_1", "28.39.2048", "0x15b3");  // ibv_devinfo of a ConnectX-7 on an older line
  m = audit_of(t);
  EXPECT_EQ(outcome(m, "security.connectx_firmware.floor"), Outcome::fail);
  EXPECT_NE(m.at("security.connectx_firmware.floor").reason.find("mlx5_1"), std::string::npos);
}

// --- AMD: driver release and ROCm per Instinct model ------------------------------------------------

TEST(Amd, TheDriverReleaseComesFromItsRepositoryAndRocmIsJudgedPerModel) {
  TempHost t;
  for (int i = 0; i < 8; ++i) {
    std::string bdf = "0000:" + std::to_string(20 + i) + ":00.0";
    t.write("/sys/bus/pci/devices/" + bdf + "/vendor", "0x1002\n");
    t.write("/sys/bus/pci/devices/" + bdf + "/device", "0x74a1\n");  // Aqua Vanjaram [Instinct MI300X]
    t.write("/sys/bus/pci/devices/" + bdf + "/class", "0x120000\n");
  }
  t.copy_from(data("amd/sys_module_amdgpu_version_dkms.txt"), "/sys/module/amdgpu/version");
  auto m = audit_of(t);
  EXPECT_EQ(outcome(m, "security.amd_gpu_driver.floor"), Outcome::unverified);
  EXPECT_NE(m.at("security.amd_gpu_driver.floor").reason.find("repo.radeon.com"), std::string::npos);
  EXPECT_EQ(outcome(m, "security.rocm.floor"), Outcome::not_applicable);  // ROCm not installed

  t.write("/etc/apt/sources.list.d/amdgpu.list", "deb [arch=amd64] https://repo.radeon.com/amdgpu/6.4.2/ubuntu jammy main\n");
  t.write("/opt/rocm/.info/version", "6.4.2-120\n");
  m = audit_of(t);
  EXPECT_EQ(outcome(m, "security.amd_gpu_driver.floor"), Outcome::fail) << m.at("security.amd_gpu_driver.floor").reason;
  EXPECT_EQ(outcome(m, "security.rocm.floor"), Outcome::pass) << m.at("security.rocm.floor").reason;

  t.write("/etc/apt/sources.list.d/amdgpu.list", "deb [arch=amd64] https://repo.radeon.com/amdgpu/31.40/ubuntu noble main\n");
  t.write("/opt/rocm/.info/version", "6.4.1-83\n");
  m = audit_of(t);
  EXPECT_EQ(outcome(m, "security.amd_gpu_driver.floor"), Outcome::pass);
  EXPECT_EQ(outcome(m, "security.rocm.floor"), Outcome::fail);
}

TEST(DcgmExporter, TheExporterHalfOfTheTagIsJudged) {
  auto facts = [](std::string v, std::string detail) {
    Facts f;
    f.present("tool.dcgm_exporter.version", v, "dcgm-exporter --version", detail);
    return f;
  };
  EXPECT_EQ(cmax::test::run_check_by_id("security.dcgm_exporter.floor", facts("4.5.2-4.8.1", "")).outcome, Outcome::fail);
  EXPECT_EQ(cmax::test::run_check_by_id("security.dcgm_exporter.floor", facts("4.5.3-4.8.2", "")).outcome, Outcome::pass);
  EXPECT_EQ(cmax::test::run_check_by_id("security.dcgm_exporter.floor", facts("1:4.6.0-4.8.3-1", "distro package")).outcome,
            Outcome::pass);
}

// --- Access: user tools, identity provider ---------------------------------------------------------

TEST(Access, UserToolsAndAnIdentityProvider) {
  TempHost t;
  auto m = audit_of(t);
  EXPECT_EQ(outcome(m, "orchestration.users.tools"), Outcome::warn);
  EXPECT_EQ(outcome(m, "orchestration.identity_provider"), Outcome::warn);
  t.write("/usr/sbin/useradd", "");
  t.write("/usr/sbin/groupadd", "");
  t.write("/etc/sssd/sssd.conf", "[sssd]\ndomains = example.com\n\n[domain/example.com]\nid_provider = ldap\n"
                                 "auth_provider = ldap\nldap_uri = ldap://ldap.example.com\n");
  m = audit_of(t);
  EXPECT_EQ(outcome(m, "orchestration.users.tools"), Outcome::pass);
  EXPECT_EQ(outcome(m, "orchestration.identity_provider"), Outcome::pass);
  EXPECT_NE(m.at("orchestration.identity_provider").observed.find("id_provider = ldap"), std::string::npos);
}

// --- A topology file inside pyxis containers ---------------------------------------------------------

TEST(TopologyInContainer, MountedAndNamedPassesMountedOnlyOrNotMountedWarns) {
  TempHost t;
  t.write("/etc/slurm/slurm.conf", "ClusterName=c\nSlurmctldHost=h\nNodeName=n[1-2]\n");
  t.write("/etc/slurm/plugstack.conf", "required /usr/local/lib/slurm/spank_pyxis.so\n");
  t.copy_from(data("nccl-topo/etc_nccl_conf_azure_ndv4.txt"), "/etc/nccl.conf");
  t.copy_from(data("nccl-topo/ndv5-topo_azure_trimmed.xml"), "/opt/microsoft/ndv4-topo.xml");
  t.write("/etc/enroot/mounts.d/10-system.fstab", "/etc/hosts /etc/hosts none bind\n");
  auto m = audit_of(t, kSlurm);
  EXPECT_EQ(outcome(m, "networking.nccl.topo_in_container"), Outcome::warn);
  EXPECT_NE(m.at("networking.nccl.topo_in_container").reason.find("mounts.d"), std::string::npos);
  t.write("/etc/enroot/mounts.d/20-nccl.fstab", "/opt/microsoft /opt/microsoft none x-create=dir,bind,ro,nosuid,nodev\n");
  m = audit_of(t, kSlurm);
  EXPECT_EQ(outcome(m, "networking.nccl.topo_in_container"), Outcome::warn);
  EXPECT_NE(m.at("networking.nccl.topo_in_container").reason.find("environ.d"), std::string::npos);
  t.write("/etc/enroot/environ.d/20-nccl.env", "NCCL_TOPO_FILE=/opt/microsoft/ndv4-topo.xml\n");
  EXPECT_EQ(outcome(audit_of(t, kSlurm), "networking.nccl.topo_in_container"), Outcome::pass);
}

// --- Parsers on real output --------------------------------------------------------------------------

TEST(PlatformParse, CpuinfoModprobeParamsAndCpulists) {
  auto cpu = parse_cpuinfo(read_data("virt/proc_cpuinfo_kvm_guest_amd_no_svm_hypervisor.txt"));
  EXPECT_EQ(cpu.arch, "x86_64");
  EXPECT_TRUE(cpu.flags.count("hypervisor"));
  EXPECT_FALSE(cpu.flags.count("svm"));
  EXPECT_EQ(count_cpulist("0-71"), 72u);
  EXPECT_EQ(count_cpulist("0,2-95,97-191"), 190u);
  EXPECT_EQ(count_cpulist(""), 0u);
  EXPECT_FALSE(count_cpulist("3-1"));
  EXPECT_EQ(parse_node_memtotal_kb("Node 1 MemTotal:       100663296 kB\n"), 100663296u);
  auto opts = parse_modprobe_options(read_data("grace/modprobe_d_nvidia_cdmm_driver.conf") +
                                     "options nvidia \\\n  NVreg_RestrictProfilingToAdminUsers=0 # counters\n");
  EXPECT_EQ(opts["nvidia.NVreg_CoherentGPUMemoryMode"], "driver");
  EXPECT_EQ(opts["nvidia.NVreg_RestrictProfilingToAdminUsers"], "0");
  auto params = parse_nvidia_params(read_data("grace/proc_driver_nvidia_params_sorted_coherent_mode_empty_trimmed.txt"));
  EXPECT_EQ(params.at("CoherentGPUMemoryMode"), "");
  EXPECT_EQ(params.at("EnableUserNUMAManagement"), "1");
}

// --- Checks whose evidence is the live host's state (processes, $HOME): their predicates ------------

TEST(LiveEvidence, SshDockerAndTheExporterProcess) {
  using cmax::test::run_check_by_id;
  Facts ssh;
  ssh.present("access.ssh.user_key", "id_ed25519 (in authorized_keys)", "~/.ssh");
  EXPECT_EQ(run_check_by_id("orchestration.ssh.between_nodes", ssh, kSlurm).outcome, Outcome::pass);
  Facts ssh2;
  ssh2.present("access.ssh.user_key", "id_rsa (not in authorized_keys)", "~/.ssh");
  EXPECT_EQ(run_check_by_id("orchestration.ssh.between_nodes", ssh2, kSlurm).outcome, Outcome::warn);
  Facts ssh3;
  ssh3.error("access.ssh.user_key", "~/.ssh", "the auditing user's home is read on the live host");
  EXPECT_EQ(run_check_by_id("orchestration.ssh.between_nodes", ssh3, kSlurm).outcome, Outcome::unverified);
  ssh3.present("access.ssh.hostbased", "yes", "/etc/ssh/sshd_config");
  EXPECT_EQ(run_check_by_id("orchestration.ssh.between_nodes", ssh3, kSlurm).outcome, Outcome::pass);

  Facts docker;
  docker.absent("tool.docker.version", "PATH: docker", "not installed");
  EXPECT_EQ(run_check_by_id("orchestration.docker.workers", docker, kSlurm).outcome, Outcome::fail);
  docker.present("tool.enroot.version", "4.1.1", "enroot version");
  docker.present("slurm.pyxis", "required spank_pyxis.so", "plugstack.conf");
  EXPECT_EQ(run_check_by_id("orchestration.docker.workers", docker, kSlurm).outcome, Outcome::warn);
  docker.present("tool.docker.version", "29.8.2", "docker --version");
  EXPECT_EQ(run_check_by_id("orchestration.docker.workers", docker, kSlurm).outcome, Outcome::pass);

  Facts exp;
  exp.present("gpu.nvidia.count", "8", "pci");
  exp.absent("proc.dcgm-exporter", "/proc/*/comm", "no process named dcgm-exporter");
  EXPECT_EQ(run_check_by_id("monitoring.dcgm_exporter.running", exp).outcome, Outcome::warn);
  exp.present("proc.dcgm-exporter", "4242", "/proc/*/comm");
  EXPECT_EQ(run_check_by_id("monitoring.dcgm_exporter.running", exp).outcome, Outcome::pass);
}

// --- enroot import: the tools it needs, and the import itself when asked ----------------------------
// enroot is not a Debian package and would pull from a registry, so these run a stand-in `enroot`
// that prints enroot's real import output (tests/data/audit/enroot) and writes -o's file: a contract
// test of how cmax runs and reads it, on the live audit's own code path.

namespace {
struct FakeTools {
  TempHost bin;
  void tool(const std::string& name, const std::string& body) {
    bin.write("/" + name, "#!/bin/sh\n" + body);
    std::filesystem::permissions(bin.dir() / name, std::filesystem::perms::owner_all);
  }
  std::map<std::string, Finding> audit(std::optional<std::string> image) {
    AuditOptions o;
    o.path_env = bin.dir().string();
    o.harness = kSlurm;
    o.enroot_import_image = image;
    o.enroot_import_timeout = std::chrono::milliseconds(10000);
    auto r = run_audit(o);
    std::map<std::string, Finding> out;
    if (r)
      for (auto& f : r->findings) out[f.check_id] = f;
    return out;
  }
};
}  // namespace

TEST(EnrootImport, NotRunUnlessAskedMissingToolsFailAndTheImportDecides) {
  FakeTools t;
  EXPECT_EQ(t.audit(std::nullopt).at("orchestration.enroot.import").outcome, Outcome::not_applicable);
  std::string ok = read_data("enroot/enroot_import_docker_ubuntu_success.txt");
  t.tool("enroot", "out=\"$3\"\ncat <<'EOF'\n" + ok + "\nEOF\nprintf 'hsqs' > \"$out\"\n");
  auto m = t.audit(std::nullopt);
  EXPECT_EQ(m.at("orchestration.enroot.import").outcome, Outcome::fail);  // no mksquashfs, curl, jq, parallel
  EXPECT_NE(m.at("orchestration.enroot.import").reason.find("mksquashfs"), std::string::npos);
  for (const char* tool : {"mksquashfs", "curl", "jq", "parallel"}) t.tool(tool, "exit 0\n");
  m = t.audit(std::nullopt);
  EXPECT_EQ(m.at("orchestration.enroot.import").outcome, Outcome::unverified);
  EXPECT_NE(m.at("orchestration.enroot.import").reason.find("--enroot-import"), std::string::npos);
  m = t.audit("docker://ubuntu:latest");
  EXPECT_EQ(m.at("orchestration.enroot.import").outcome, Outcome::pass) << m.at("orchestration.enroot.import").reason;

  std::string err = read_data("enroot/enroot_import_error_404.txt");
  t.tool("enroot", "cat >&2 <<'EOF'\n" + err + "\nEOF\nexit 1\n");
  m = t.audit("docker://localhost:5000#tmp:2");
  EXPECT_EQ(m.at("orchestration.enroot.import").outcome, Outcome::fail);
  EXPECT_NE(m.at("orchestration.enroot.import").observed.find("returned error code: 404"), std::string::npos);
}
