// Golden tests of the audit's pure parsers on real formats.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "audit/parse/dpkg_status.h"
#include "audit/parse/kv_conf.h"
#include "audit/parse/nvidia_version.h"
#include "audit/parse/os_release.h"
#include "audit/parse/sysfs.h"
#include "core/strings.h"
#include "support/temp_host.h"

using namespace cmax::audit;

TEST(NvidiaVersion, OpenKernelModule) {
  auto info = parse_nvidia_version(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  "
      "(dvs-builder@U16-I3-B03-4-3)  Thu Feb 22 01:25:25 UTC 2024\n"
      "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->version, "550.54.14");
  EXPECT_TRUE(info->open_module);
  EXPECT_EQ(info->arch, "x86_64");
  EXPECT_NE(info->gcc.find("12.3.0"), std::string::npos);
}

TEST(NvidiaVersion, ProprietaryModule) {
  auto info = parse_nvidia_version(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar  5 22:42:15 UTC 2024\n"
      "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->version, "535.161.08");
  EXPECT_FALSE(info->open_module);
  EXPECT_FALSE(parse_nvidia_version("GCC version: 12\n"));
  EXPECT_FALSE(parse_nvidia_version("NVRM version: NVIDIA UNIX Kernel Module  garbage\n"));
}

TEST(DpkgStatus, OnlyInstalledPackages) {
  auto pkgs = parse_dpkg_status(
      "Package: runc\nStatus: install ok installed\nPriority: optional\nVersion: 1.1.5+ds1-1+deb12u1\n"
      "Description: Open Container Project - runtime\n runc is a CLI tool\n .\n more\n\n"
      "Package: removed\nStatus: deinstall ok config-files\nVersion: 1.0\n\n"
      "Package: munge\nStatus: install ok installed\nVersion: 0.5.15-2");  // no trailing newline
  EXPECT_EQ(pkgs.size(), 2u);
  EXPECT_EQ(pkgs.at("runc"), "1.1.5+ds1-1+deb12u1");
  EXPECT_EQ(pkgs.at("munge"), "0.5.15-2");
  EXPECT_FALSE(pkgs.count("removed"));
}

TEST(DpkgStatus, ThisMachinesDatabaseParses) {
  std::ifstream in("/var/lib/dpkg/status");
  if (!in) GTEST_SKIP() << "no dpkg database here";
  std::stringstream ss;
  ss << in.rdbuf();
  auto pkgs = parse_dpkg_status(ss.str());
  EXPECT_GT(pkgs.size(), 100u);
  EXPECT_TRUE(pkgs.count("dpkg"));
}

TEST(OsRelease, QuotedValuesAndKernelPackageVersion) {
  auto kv = parse_os_release("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n# c\n");
  EXPECT_EQ(kv.at("ID"), "debian");
  EXPECT_EQ(kv.at("VERSION_ID"), "12");
  EXPECT_EQ(kv.at("PRETTY_NAME"), "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(kernel_package_version("Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian "
                                   "12.2.0-14) 12.2.0) #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)",
                                   ""),
            "6.1.76-1");
  EXPECT_EQ(kernel_package_version("Linux version 5.15.0-97-generic ...", "Ubuntu 5.15.0-97.107-generic 5.15.131"),
            "5.15.0-97.107");
  EXPECT_EQ(kernel_package_version("Linux version 6.18.44 (root@build) #1 SMP", ""), "");
  EXPECT_EQ(kernel_upstream_version("5.15.0-101.111", "Ubuntu 5.15.0-101.111-generic 5.15.143"), "5.15.143");
  EXPECT_EQ(kernel_upstream_version("6.1.76-1", ""), "6.1.76");
  EXPECT_EQ(kernel_upstream_version("", ""), "");
}

TEST(KvConf, CommentsQuotesAndLastWins) {
  auto e = parse_kv_conf("# /etc/nccl.conf\nNCCL_ALGO=Ring # forced by the provider\nNCCL_IB_GID_INDEX=\"3\"\n"
                         "export NCCL_PROTO=Simple\nnccl_algo=Tree\ngarbage line\nNodeName=n1 CPUs=2\n");
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(find_kv(e, "NCCL_ALGO")->value, "Tree");  // later line, any case
  EXPECT_EQ(find_kv(e, "NCCL_IB_GID_INDEX")->value, "3");
  EXPECT_EQ(find_kv(e, "NCCL_PROTO")->line, 4);
  EXPECT_EQ(find_kv(e, "NodeName")->value, "n1 CPUs=2");
  EXPECT_EQ(find_kv(e, "missing"), nullptr);
}

TEST(Sysfs, ModulesMountsLimitsStates) {
  auto mods = parse_proc_modules("nvidia_uvm 1900544 0 - Live 0x0000000000000000 (POE)\nnvidia 62124032 2 nvidia_uvm, Live 0x0\n");
  ASSERT_EQ(mods.size(), 2u);
  EXPECT_EQ(mods[1], "nvidia");
  auto m = parse_proc_mounts("server:/export /mnt/my\\040data nfs4 rw,relatime,vers=4.2,soft 0 0\nshort line\n");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].mount_point, "/mnt/my data");
  EXPECT_EQ(m[0].fs_type, "nfs4");
  EXPECT_EQ(parse_limits_memlock("Limit                     Soft Limit           Hard Limit           Units\n"
                                 "Max locked memory         8388608              8388608              bytes\n"),
            "8388608");
  auto s = parse_sysfs_state("4: ACTIVE\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->code, 4);
  EXPECT_EQ(s->name, "ACTIVE");
  EXPECT_FALSE(parse_sysfs_state("ACTIVE"));
}
