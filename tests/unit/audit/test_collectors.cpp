// Collectors against fixture host trees built from real file formats.

#include <gtest/gtest.h>

#include "audit/collectors/collector.h"
#include "support/temp_host.h"

using namespace cmax::audit;
using cmax::test::collect_with;
using cmax::test::TempHost;

namespace {

constexpr const char* kOpenDriver =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Thu Feb 22 01:25:25 UTC 2024\nGCC version:  gcc version 12.3.0\n";

void add_pci(TempHost& t, const std::string& bdf, const char* vendor, const char* klass) {
  t.write("/sys/bus/pci/devices/" + bdf + "/vendor", std::string(vendor) + "\n");
  t.write("/sys/bus/pci/devices/" + bdf + "/class", std::string(klass) + "\n");
}

}  // namespace

TEST(OsCollector, DebianHost) {
  TempHost t;
  t.write("/usr/lib/os-release", "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n");
  t.symlink("../usr/lib/os-release", "/etc/os-release");
  t.write("/proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
  t.write("/proc/version",
          "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld "
          "(GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)\n");
  t.write("/proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=UUID=x ro iommu=pt\n");
  t.write("/lib/modules/6.1.0-18-amd64/modules.dep", "");
  t.write("/lib/modules/6.1.0-21-amd64/modules.dep", "");
  t.mkdir("/lib/modules/5.10.0-1-amd64");  // leftover without modules.dep: not a kernel
  t.write("/proc/mounts", "sysfs /sys sysfs rw 0 0\nfs1:/home /home nfs4 rw,soft,vers=4.2 0 0\n");
  t.write("/etc/sudoers", "root ALL=(ALL:ALL) ALL\n");
  t.write("/etc/sudoers.d/90-cloud", "ubuntu ALL=(ALL) NOPASSWD:ALL\n");
  auto f = collect_with(t.host(), collect_os);
  EXPECT_EQ(f.value_or("os.distro"), "debian-12");
  EXPECT_EQ(f.value_or("kernel.release"), "6.1.0-18-amd64");
  EXPECT_EQ(f.value_or("kernel.package_version"), "6.1.76-1");
  EXPECT_EQ(f.value_or("kernel.installed"), "6.1.0-18-amd64 6.1.0-21-amd64");
  EXPECT_EQ(f.value_or("storage.shared_mounts"), "/home (nfs4)");
  EXPECT_TRUE(f.is_present("storage.nfs_soft_mounts"));
  EXPECT_NE(f.value_or("access.sudo_nopasswd").find("90-cloud"), std::string_view::npos);
  EXPECT_EQ(f.find("limits.memlock")->status, FactStatus::error);  // not knowable from an image
}

TEST(OsCollector, EmptyRootGivesAnswersNotCrashes) {
  TempHost t;
  auto f = collect_with(t.host(), collect_os);
  EXPECT_EQ(f.find("os.id")->status, FactStatus::absent);
  EXPECT_EQ(f.find("kernel.release")->status, FactStatus::absent);
  EXPECT_EQ(f.find("kernel.installed")->status, FactStatus::error);
}

TEST(GpuCollector, HgxLikeNode) {
  TempHost t;
  add_pci(t, "0000:1b:00.0", "0x10de", "0x030200");
  add_pci(t, "0000:43:00.0", "0x10de", "0x030200");
  add_pci(t, "0000:05:00.0", "0x10de", "0x068000");  // NVSwitch
  add_pci(t, "0000:1a:00.0", "0x15b3", "0x020700");  // ConnectX InfiniBand
  add_pci(t, "0000:00:00.0", "0x8086", "0x060000");
  t.write("/proc/driver/nvidia/version", kOpenDriver);
  t.write("/proc/modules", "nvidia_peermem 16384 0 - Live 0x0\nnvidia 62124032 2 - Live 0x0\next4 1 1 - Live 0x0\n");
  auto f = collect_with(t.host(), collect_gpu);
  EXPECT_EQ(f.value_or("gpu.nvidia.count"), "2");
  EXPECT_EQ(f.value_or("gpu.nvswitch.count"), "1");
  EXPECT_EQ(f.value_or("nic.mellanox.count"), "1");
  EXPECT_EQ(f.value_or("gpu.driver.version"), "550.54.14");
  EXPECT_EQ(f.value_or("gpu.driver.flavor"), "open");
  EXPECT_EQ(f.value_or("kernel.modules"), "nvidia_peermem nvidia");
  EXPECT_EQ(f.find("proc.nvidia-persiste")->status, FactStatus::error);
}

TEST(GpuCollector, GarbageDriverFileIsAnErrorWithTheReason) {
  TempHost t;
  t.write("/proc/driver/nvidia/version", "\x01\x02garbage\xff\n");
  auto f = collect_with(t.host(), collect_gpu);
  ASSERT_EQ(f.find("gpu.driver.version")->status, FactStatus::error);
  EXPECT_NE(f.find("gpu.driver.version")->detail.find("NVRM version"), std::string::npos);
  EXPECT_EQ(f.find("gpu.nvidia.count")->status, FactStatus::present);  // no /sys/bus/pci: zero GPUs
  EXPECT_EQ(f.value_or("gpu.nvidia.count"), "0");
}

TEST(ToolsCollector, VersionsFromTheDpkgDatabaseOfAHostRoot) {
  TempHost t;
  t.write("/var/lib/dpkg/status",
          "Package: runc\nStatus: install ok installed\nVersion: 1.1.5+ds1-1+deb12u1\n\n"
          "Package: slurm-wlm\nStatus: install ok installed\nVersion: 22.05.8-4+deb12u3\n\n"
          "Package: munge\nStatus: install ok installed\nVersion: 0.5.15-2\n\n"
          "Package: linux-image-6.1.0-18-amd64\nStatus: install ok installed\nVersion: 6.1.76-1\n");
  t.write("/usr/bin/runc", "#!/bin/false\n");  // present in the image, never executed
  t.write("/usr/local/cuda/version.json", R"({"cuda": {"name": "CUDA SDK", "version": "12.4.1"}})");
  t.write("/etc/docker/daemon.json", R"({"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}})");
  t.mkdir("/opt/hpcx");
  auto f = collect_with(t.host(), collect_tools);
  EXPECT_EQ(f.value_or("tool.runc.version"), "1.1.5+ds1-1+deb12u1");
  EXPECT_EQ(f.find("tool.runc.version")->detail, "distro package");
  EXPECT_EQ(f.value_or("tool.slurm.version"), "22.05.8-4+deb12u3");
  EXPECT_EQ(f.value_or("tool.munge.version"), "0.5.15-2");
  EXPECT_EQ(f.find("tool.docker.version")->status, FactStatus::absent);
  EXPECT_EQ(f.value_or("cuda.version"), "12.4.1");
  EXPECT_EQ(f.value_or("tool.hpcx.path"), "/opt/hpcx");
  EXPECT_EQ(f.find("tool.lmod.path")->status, FactStatus::absent);
  EXPECT_TRUE(f.is_present("containers.gpu_runtime"));
  EXPECT_NE(f.value_or("pkg.kernel_images").find("6.1.76-1"), std::string_view::npos);
}

TEST(ToolsCollector, MalformedCudaVersionJsonIsAnError) {
  TempHost t;
  t.write("/usr/local/cuda/version.json", "{\"cuda\": ");
  auto f = collect_with(t.host(), collect_tools);
  EXPECT_EQ(f.find("cuda.version")->status, FactStatus::error);
  EXPECT_EQ(f.find("pkg.manager")->status, FactStatus::absent);
}

TEST(ToolsCollector, LiveToolVersionFromTheBinary) {
  // A real program on this machine, found on PATH and run: sh has no --version, so use a stand-in
  // script that prints like runc does.
  TempHost t;
  t.write("/bin/runc", "#!/bin/sh\necho 'runc version 1.3.6'\necho 'commit: v1.3.6-0-gdeadbee'\n");
  std::filesystem::permissions(t.dir() / "bin/runc", std::filesystem::perms::owner_all);
  cmax::core::HostRoot live("/");
  CollectContext ctx{live, std::chrono::milliseconds(2000), (t.dir() / "bin").string()};
  Facts pkgs, f;
  tool_version_fact(ctx, pkgs, f, "tool.runc.version", {"runc"}, {"--version"}, {"runc"}, "version");
  EXPECT_EQ(f.value_or("tool.runc.version"), "1.3.6");
  EXPECT_NE(f.find("tool.runc.version")->source.find("--version"), std::string::npos);
}

TEST(ToolsCollector, HungToolTimesOutAsAnError) {
  TempHost t;
  t.write("/bin/dcgmi", "#!/bin/sh\nsleep 30\n");
  std::filesystem::permissions(t.dir() / "bin/dcgmi", std::filesystem::perms::owner_all);
  cmax::core::HostRoot live("/");
  CollectContext ctx{live, std::chrono::milliseconds(200), (t.dir() / "bin").string()};
  Facts pkgs, f;
  tool_version_fact(ctx, pkgs, f, "tool.dcgm.version", {"dcgmi"}, {"--version"}, {}, "version");
  ASSERT_EQ(f.find("tool.dcgm.version")->status, FactStatus::error);
  EXPECT_NE(f.find("tool.dcgm.version")->detail.find("timed out"), std::string::npos);
}

TEST(KernelLogCollector, XidLinesInAHostRootsSyslog) {
  TempHost t;
  t.write("/var/log/kern.log",
          "Nov 22 14:56:47 gpu-07 kernel: [ 130.4] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
          "GPU has fallen off the bus.\n"
          "Nov 22 14:56:48 gpu-07 kernel: [ 131.0] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
          "GPU has fallen off the bus.\n"
          "Nov 22 14:57:00 gpu-07 kernel: ordinary noise\n"
          "Nov 22 15:00:00 gpu-07 kernel: NVRM: Xid (PCI:0000:86:00): 13, pid=1, name=python, Graphics Exception\n");
  auto f = collect_with(t.host(), collect_kernel_log);
  EXPECT_EQ(f.value_or("kernel_log.xid_count"), "3");
  EXPECT_EQ(f.value_or("kernel_log.xid_summary"), "Xid 13 x1 (0000:86:00); Xid 79 x2 (0000:3b:00)");
}

TEST(KernelLogCollector, NoLogInAHostRootIsUnknownNotClean) {
  TempHost t;
  auto f = collect_with(t.host(), collect_kernel_log);
  EXPECT_EQ(f.find("kernel_log.xid_count")->status, FactStatus::error);
}

TEST(SysctlCollector, ReadsTheTable) {
  TempHost t;
  t.write("/proc/sys/kernel/perf_event_paranoid", "2\n");
  auto f = collect_with(t.host(), collect_sysctl);
  EXPECT_EQ(f.value_or("sysctl.kernel.perf_event_paranoid"), "2");
  EXPECT_EQ(f.find("sysctl.kernel.kptr_restrict")->status, FactStatus::absent);
}

TEST(GpuCollector, HugeDriverFileIsUnverifiedNotTruncated) {
  TempHost t;
  t.write("/sys/bus/pci/devices/0000:1b:00.0/vendor", "0x10de\n");
  t.write("/sys/bus/pci/devices/0000:1b:00.0/class", "0x030200\n");
  t.write("/proc/driver/nvidia/version",
          std::string("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08\n") + std::string(200000, 'x'));
  auto f = collect_with(t.host(), collect_gpu);
  ASSERT_EQ(f.find("gpu.driver.version")->status, FactStatus::error);
  auto finding = cmax::test::run_check_by_id("security.nvidia_driver.floor", f);
  EXPECT_EQ(finding.outcome, Outcome::unverified);
  EXPECT_NE(finding.reason.find("larger than"), std::string::npos) << finding.reason;
}
