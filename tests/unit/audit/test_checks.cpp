// The security, lifecycle, storage, reliability and monitoring tables, each check through its
// pass, warn/fail and not_applicable/unverified paths.

#include <gtest/gtest.h>

#include "audit/floors.h"
#include "core/clock.h"

#include <fstream>
#include <set>
#include <sstream>

#include "audit/audit.h"
#include "audit/check.h"
#include "support/temp_host.h"

using namespace cmax::audit;
using cmax::test::run_check_by_id;

namespace {

Facts gpu_node() {
  Facts f;
  f.present("gpu.nvidia.count", "8", "/sys/bus/pci/devices");
  f.present("gpu.nvswitch.count", "4", "/sys/bus/pci/devices");
  return f;
}

Outcome outcome(std::string_view id, const Facts& f) { return run_check_by_id(id, f).outcome; }

}  // namespace

TEST(CheckTable, IdsAreUniqueAndRowsComplete) {
  std::set<std::string_view> ids;
  for (const auto& c : all_checks()) {
    EXPECT_TRUE(ids.insert(c.id).second) << "duplicate " << c.id;
    EXPECT_FALSE(c.title.empty()) << c.id;
    EXPECT_FALSE(c.criterion.empty()) << c.id;
    EXPECT_FALSE(c.remediation.empty()) << c.id;
    EXPECT_NE(c.predicate, nullptr) << c.id;
    EXPECT_TRUE(c.id.starts_with(to_string(c.category))) << c.id << " is not under " << to_string(c.category);
  }
  EXPECT_GE(ids.size(), 40u);
}

TEST(SecurityChecks, DriverFloorPerBranch) {
  Facts f = gpu_node();
  f.present("gpu.driver.version", "535.309.01", "/proc/driver/nvidia/version");
  EXPECT_EQ(outcome("security.nvidia_driver.floor", f), Outcome::pass);
  f.present("gpu.driver.version", "535.161.08", "/proc/driver/nvidia/version");
  auto low = run_check_by_id("security.nvidia_driver.floor", f);
  EXPECT_EQ(low.outcome, Outcome::fail);
  EXPECT_EQ(low.expected, ">= 535.309.01");
  EXPECT_FALSE(low.cves.empty());
  EXPECT_EQ(low.evidence_source, "/proc/driver/nvidia/version");
  f.present("gpu.driver.version", "570.86.15", "/proc/driver/nvidia/version");  // branch dropped from bulletins
  auto eol = run_check_by_id("security.nvidia_driver.floor", f);
  EXPECT_EQ(eol.outcome, Outcome::fail);
  EXPECT_NE(eol.expected.find("supported train"), std::string::npos);
  f.present("gpu.driver.version", "garbage", "/proc/driver/nvidia/version");
  EXPECT_EQ(outcome("security.nvidia_driver.floor", f), Outcome::unverified);
  Facts cpu;
  cpu.present("gpu.nvidia.count", "0", "/sys/bus/pci/devices");
  auto na = run_check_by_id("security.nvidia_driver.floor", cpu);
  EXPECT_EQ(na.outcome, Outcome::not_applicable);
  EXPECT_NE(na.reason.find("no NVIDIA GPU"), std::string::npos);
}

TEST(SecurityChecks, ToolFloorsAndDistroBackports) {
  Facts f;
  f.present("tool.runc.version", "1.1.12", "runc --version");
  EXPECT_EQ(outcome("security.runc.floor", f), Outcome::fail);  // train 1.1 no longer supported
  f.present("tool.runc.version", "1.3.6", "runc --version");
  EXPECT_EQ(outcome("security.runc.floor", f), Outcome::pass);
  // A distro package with no backported fix on record is judged by the upstream release it
  // carries (1.1.5), and fails: a below-floor package is never a pass by default.
  f.present("tool.runc.version", "1.1.5+ds1-1+deb12u1", "dpkg: runc", "distro package");
  auto distro = run_check_by_id("security.runc.floor", f);
  EXPECT_EQ(distro.outcome, Outcome::fail);
  EXPECT_NE(distro.reason.find("(upstream 1.1.5+ds1)"), std::string::npos) << distro.reason;
  EXPECT_NE(distro.reason.find("no fix backported to this package is recorded"), std::string::npos) << distro.reason;
  f.absent("tool.runc.version", "PATH: runc", "not installed (no runc on PATH)");
  EXPECT_EQ(outcome("security.runc.floor", f), Outcome::not_applicable);
  f.error("tool.runc.version", "runc --version", "timed out after 3000 ms");
  auto hung = run_check_by_id("security.runc.floor", f);
  EXPECT_EQ(hung.outcome, Outcome::unverified);
  EXPECT_NE(hung.reason.find("timed out"), std::string::npos);
  Facts m;
  m.present("tool.munge.version", "0.5.15", "munged --version");
  auto munge = run_check_by_id("security.munge.floor", m);
  EXPECT_EQ(munge.outcome, Outcome::fail);
  EXPECT_TRUE(munge.security);
  EXPECT_NE(std::find(munge.cves.begin(), munge.cves.end(), "CVE-2026-25506"), munge.cves.end());
  m.present("tool.munge.version", "0.5.18", "munged --version");
  EXPECT_EQ(outcome("security.munge.floor", m), Outcome::pass);
}

// The fail-open issue 23 found: a packager's epoch outranked every upstream release, so each of
// these passed its floor. Each is the release before its floor's fixes, packaged.
TEST(SecurityChecks, EpochsAndRevisionsNeverPassABelowFloorPackage) {
  struct Case {
    const char* check;
    const char* fact;
    const char* package;
    const char* version;
    const char* upstream;
  };
  for (const Case& c : {Case{"security.docker.floor", "tool.docker.version", "docker-ce", "5:24.0.7-1~ubuntu.22.04~jammy", "24.0.7"},
                        Case{"security.dcgm.floor", "tool.dcgm.version", "datacenter-gpu-manager", "1:3.3.9", "3.3.9"},
                        Case{"security.runc.floor", "tool.runc.version", "runc", "2:1.1.12", "1.1.12"},
                        Case{"security.nvidia_container_toolkit.floor", "tool.nvidia_ctk.version",
                             "nvidia-container-toolkit", "1:1.16.1", "1.16.1"}}) {
    Facts f;
    f.present(c.fact, c.version, std::string("dpkg: ") + c.package, "distro package");
    auto r = run_check_by_id(c.check, f);
    EXPECT_EQ(r.outcome, Outcome::fail) << c.check << " " << c.version << ": " << r.reason;
    EXPECT_NE(r.reason.find(std::string("(upstream ") + c.upstream + ")"), std::string::npos) << r.reason;
    EXPECT_TRUE(r.security) << c.check;
  }
}

TEST(SecurityChecks, ADistroFixOnRecordMakesABelowFloorPackageAWarnWithTheReason) {
  auto floors = cmax::audit::parse_floors(R"({"schema": "cmax.min-versions/1", "updated": "2026-12-01", "components": [
      {"component": "runc", "kind": "security", "floor": "1.5.0", "date": "2026-06-22",
       "distros": {"debian-12": "1.1.5+ds1-1+deb12u3"},
       "distros_source": "https://security-tracker.debian.org/tracker/source-package/runc"}]})",
                                          "test");
  ASSERT_TRUE(floors) << floors.error().message;
  cmax::core::FixedClock clock(std::chrono::sys_days(std::chrono::year(2026) / 12 / 2));
  auto judge = [&](std::string_view version, std::string_view distro) {
    Facts f;
    f.present("tool.runc.version", std::string(version), "dpkg: runc", "distro package");
    f.present("os.distro", std::string(distro), "/etc/os-release");
    for (const auto& c : cmax::audit::all_checks())
      if (c.id == "security.runc.floor") return cmax::audit::run_check(c, {f, *floors, cmax::audit::kStandalone, clock});
    return cmax::audit::Finding{};
  };
  auto patched = judge("1.1.5+ds1-1+deb12u3", "debian-12");
  EXPECT_EQ(patched.outcome, Outcome::warn) << patched.reason;
  EXPECT_NE(patched.reason.find("backported to 1.1.5+ds1-1+deb12u3"), std::string::npos) << patched.reason;
  auto older = judge("1.1.5+ds1-1+deb12u1", "debian-12");
  EXPECT_EQ(older.outcome, Outcome::fail) << older.reason;
  EXPECT_NE(older.reason.find("below debian-12's fixed package"), std::string::npos) << older.reason;
  auto elsewhere = judge("1.1.5+ds1-1+deb12u3", "ubuntu-22.04");
  EXPECT_EQ(elsewhere.outcome, Outcome::fail) << "another distro's fix says nothing of this one";
  auto current = judge("1.5.1-1", "debian-12");
  EXPECT_EQ(current.outcome, Outcome::pass) << current.reason;
}

TEST(SecurityChecks, KernelCves) {
  Facts f;
  f.present("kernel.release", "6.1.0-18-amd64", "/proc/sys/kernel/osrelease");
  f.present("os.distro", "debian-12", "/etc/os-release");
  f.present("kernel.package_version", "6.1.76-1", "/proc/version");
  EXPECT_EQ(outcome("security.kernel.cves", f), Outcome::pass);
  f.present("kernel.package_version", "6.1.8-1", "/proc/version");  // before the overlayfs and nf_tables fixes
  auto old = run_check_by_id("security.kernel.cves", f);
  EXPECT_EQ(old.outcome, Outcome::fail);
  EXPECT_NE(std::find(old.cves.begin(), old.cves.end(), "CVE-2024-1086"), old.cves.end());
  Facts up;
  up.present("kernel.release", "5.15.20", "/proc/sys/kernel/osrelease");  // vanilla: Dirty Pipe fixed in 5.15.25
  auto vanilla = run_check_by_id("security.kernel.cves", up);
  EXPECT_EQ(vanilla.outcome, Outcome::fail);
  EXPECT_NE(std::find(vanilla.cves.begin(), vanilla.cves.end(), "CVE-2022-0847"), vanilla.cves.end());
  Facts ubuntu;  // Ubuntu keeps "5.15.0" in the release; the signature names the real upstream release
  ubuntu.present("kernel.release", "5.15.0-101-generic", "/proc/sys/kernel/osrelease");
  ubuntu.present("os.distro", "ubuntu-22.04", "/etc/os-release");
  ubuntu.present("kernel.package_version", "5.15.0-101.111", "/proc/version_signature");
  ubuntu.present("kernel.upstream_version", "5.15.143", "/proc/version_signature");
  EXPECT_EQ(outcome("security.kernel.cves", ubuntu), Outcome::pass);
  ubuntu.present("kernel.package_version", "5.15.0-97.107", "/proc/version_signature");
  auto jammy_old = run_check_by_id("security.kernel.cves", ubuntu);
  EXPECT_EQ(jammy_old.outcome, Outcome::fail);  // the distro entry for CVE-2024-1086 says 5.15.0-101.111
  Facts distro_unknown;
  distro_unknown.present("kernel.release", "5.15.0-25-generic", "/proc/sys/kernel/osrelease");
  EXPECT_EQ(outcome("security.kernel.cves", distro_unknown), Outcome::warn);
  Facts none;
  EXPECT_EQ(outcome("security.kernel.cves", none), Outcome::unverified);
}

TEST(SecurityChecks, SysctlHardening) {
  Facts f;
  f.present("sysctl.kernel.randomize_va_space", "2", "/proc/sys/kernel/randomize_va_space");
  EXPECT_EQ(outcome("security.aslr", f), Outcome::pass);
  f.present("sysctl.kernel.randomize_va_space", "0", "/proc/sys/kernel/randomize_va_space");
  EXPECT_EQ(outcome("security.aslr", f), Outcome::fail);  // a security check fails
  f.present("sysctl.kernel.kptr_restrict", "0", "/proc/sys/kernel/kptr_restrict");
  EXPECT_EQ(outcome("security.kptr_restrict", f), Outcome::warn);
  f.present("sysctl.fs.suid_dumpable", "2", "/proc/sys/fs/suid_dumpable");
  EXPECT_EQ(outcome("security.suid_dumpable", f), Outcome::pass);
  f.present("sysctl.fs.suid_dumpable", "1", "/proc/sys/fs/suid_dumpable");
  EXPECT_EQ(outcome("security.suid_dumpable", f), Outcome::warn);
  f.present("sysctl.kernel.dmesg_restrict", "x", "/proc/sys/kernel/dmesg_restrict");
  EXPECT_EQ(outcome("security.dmesg_restrict", f), Outcome::unverified);
  f.error("sysctl.kernel.unprivileged_bpf_disabled", "/proc/sys/kernel/unprivileged_bpf_disabled", "permission denied");
  EXPECT_EQ(outcome("security.unprivileged_bpf", f), Outcome::unverified);
}

TEST(LifecycleChecks, OsSupportAgainstTheInjectedClock) {
  Facts f;
  f.present("os.distro", "debian-12", "/etc/os-release");
  EXPECT_EQ(outcome("lifecycle.os.supported", f), Outcome::pass);
  f.present("os.distro", "ubuntu-20.04", "/etc/os-release");  // standard support ended 2025-05-31
  EXPECT_EQ(outcome("lifecycle.os.supported", f), Outcome::fail);
  f.present("os.distro", "rhel-9.4", "/etc/os-release");
  EXPECT_EQ(outcome("lifecycle.os.supported", f), Outcome::pass);
  f.present("os.distro", "plan9-4", "/etc/os-release");
  EXPECT_EQ(outcome("lifecycle.os.supported", f), Outcome::unverified);
}

TEST(LifecycleChecks, RebootPendingAndDriverCudaMatch) {
  Facts f;
  f.present("kernel.release", "6.1.0-18-amd64", "/proc/sys/kernel/osrelease");
  f.present("kernel.installed", "6.1.0-18-amd64 6.1.0-21-amd64 6.1.0-21-rt-amd64x", "/lib/modules");
  auto r = run_check_by_id("lifecycle.kernel.reboot_pending", f);
  EXPECT_EQ(r.outcome, Outcome::warn);
  EXPECT_NE(r.reason.find("6.1.0-21-amd64"), std::string::npos);
  f.present("kernel.installed", "6.1.0-18-amd64", "/lib/modules");
  EXPECT_EQ(outcome("lifecycle.kernel.reboot_pending", f), Outcome::pass);

  Facts g = gpu_node();
  g.present("gpu.driver.version", "535.161.08", "/proc/driver/nvidia/version");
  g.present("cuda.version", "12.4.1", "/usr/local/cuda/version.json");
  EXPECT_EQ(outcome("lifecycle.cuda.driver_compat", g), Outcome::pass);
  g.present("cuda.version", "13.0.1", "/usr/local/cuda/version.json");
  EXPECT_EQ(outcome("lifecycle.cuda.driver_compat", g), Outcome::fail);
  g.absent("cuda.version", "/usr/local/cuda/version.json", "no CUDA toolkit");
  EXPECT_EQ(outcome("lifecycle.cuda.driver_compat", g), Outcome::not_applicable);
  g.absent("tool.nvcc.version", "PATH: nvcc", "not installed");
  EXPECT_EQ(outcome("lifecycle.nvcc.present", g), Outcome::warn);
  g.present("cuda.version", "12.0.0", "/usr/local/cuda/version.json");
  EXPECT_EQ(outcome("lifecycle.cuda.floor", g), Outcome::fail);
}

TEST(ReliabilityChecks, RecentXids) {
  Facts f;
  f.present("kernel_log.xid_count", "0", "/dev/kmsg", "ring buffer covers 10 h");
  EXPECT_EQ(outcome("reliability.xid_recent", f), Outcome::pass);
  f.present("kernel_log.xid_count", "3", "/dev/kmsg", "ring buffer covers 10 h");
  f.present("kernel_log.xid_summary", "Xid 13 x2 (0000:86:00); Xid 31 x1 (0000:86:00)", "/dev/kmsg");
  EXPECT_EQ(outcome("reliability.xid_recent", f), Outcome::warn);
  f.present("kernel_log.xid_summary", "Xid 13 x2 (0000:86:00); Xid 79 x1 (0000:3b:00)", "/dev/kmsg");
  auto hw = run_check_by_id("reliability.xid_recent", f);
  EXPECT_EQ(hw.outcome, Outcome::fail);
  EXPECT_NE(hw.observed.find("Xid 79"), std::string::npos);
  f.error("kernel_log.xid_count", "/dev/kmsg", "open /dev/kmsg: permission denied");
  EXPECT_EQ(outcome("reliability.xid_recent", f), Outcome::unverified);
}

TEST(ReliabilityChecks, DaemonsAndTuning) {
  Facts f = gpu_node();
  f.absent("proc.nv-fabricmanage", "/proc/*/comm", "no process named nv-fabricmanage");
  EXPECT_EQ(outcome("reliability.fabricmanager", f), Outcome::fail);
  f.present("proc.nv-fabricmanage", "1234", "/proc/*/comm");
  EXPECT_EQ(outcome("reliability.fabricmanager", f), Outcome::pass);
  f.present("gpu.nvswitch.count", "0", "/sys/bus/pci/devices");
  EXPECT_EQ(outcome("reliability.fabricmanager", f), Outcome::not_applicable);
  f.error("proc.nvidia-persiste", "/proc/*/comm", "processes of a host root image cannot be seen");
  EXPECT_EQ(outcome("reliability.persistenced", f), Outcome::unverified);
  f.present("cpu.governors", "powersave", "/sys/devices/system/cpu");
  EXPECT_EQ(outcome("reliability.cpu_governor", f), Outcome::warn);
  f.present("cpu.governors", "performance", "/sys/devices/system/cpu");
  EXPECT_EQ(outcome("reliability.cpu_governor", f), Outcome::pass);
  f.present("sysctl.kernel.numa_balancing", "1", "/proc/sys/kernel/numa_balancing");
  EXPECT_EQ(outcome("reliability.numa_balancing", f), Outcome::warn);
}

TEST(StorageAndMonitoringChecks, PresenceAndOptions) {
  Facts f = gpu_node();
  f.absent("storage.shared_mounts", "/proc/mounts", "no network or parallel filesystem is mounted");
  EXPECT_EQ(outcome("storage.shared_fs", f), Outcome::warn);
  f.present("storage.fs_types", "ext4 nfs4", "/proc/mounts");
  f.present("storage.nfs_soft_mounts", "/home (rw,soft)", "/proc/mounts");
  EXPECT_EQ(outcome("storage.nfs_hard", f), Outcome::warn);
  f.absent("storage.nfs_soft_mounts", "/proc/mounts", "none");
  EXPECT_EQ(outcome("storage.nfs_hard", f), Outcome::pass);
  f.present("storage.fs_types", "ext4", "/proc/mounts");
  EXPECT_EQ(outcome("storage.nfs_hard", f), Outcome::not_applicable);

  f.absent("tool.dcgm.version", "PATH: dcgmi", "not installed");
  EXPECT_EQ(outcome("monitoring.dcgm.present", f), Outcome::warn);
  EXPECT_EQ(outcome("monitoring.dcgm.hostengine", f), Outcome::not_applicable);
  f.present("tool.dcgm.version", "4.5.3", "dcgmi --version");
  f.absent("proc.nv-hostengine", "/proc/*/comm", "no process named nv-hostengine");
  EXPECT_EQ(outcome("monitoring.dcgm.hostengine", f), Outcome::warn);
  f.present("sysctl.kernel.perf_event_paranoid", "4", "/proc/sys/kernel/perf_event_paranoid");
  EXPECT_EQ(outcome("monitoring.perf_event_paranoid", f), Outcome::warn);
  f.present("sysctl.kernel.perf_event_paranoid", "1", "/proc/sys/kernel/perf_event_paranoid");
  EXPECT_EQ(outcome("monitoring.perf_event_paranoid", f), Outcome::pass);
}

TEST(CheckEngine, ExitCodes) {
  Finding pass, warn, fail, secfail;
  pass.outcome = Outcome::pass;
  warn.outcome = Outcome::warn;
  fail.outcome = Outcome::fail;
  secfail.outcome = Outcome::fail;
  secfail.security = true;
  EXPECT_EQ(exit_code_for({pass, warn}), 0);
  EXPECT_EQ(exit_code_for({pass, fail}), 1);
  EXPECT_EQ(exit_code_for({fail, secfail, pass}), 2);
}

TEST(CheckEngine, AThrowingPredicateBecomesUnverified) {
  static const Check kBoom = {"security.boom", Category::security, Severity::config, false, kAnyHarness, "t", "c", "d",
                              "r", nullptr, [](const CheckContext&, const Check&) -> Verdict {
                                throw std::runtime_error("boom");
                              }};
  Facts f;
  cmax::core::FixedClock clock(std::chrono::system_clock::time_point{});
  CheckContext ctx{f, cmax::test::test_floors(), kStandalone, clock};
  auto r = run_check(kBoom, ctx);
  EXPECT_EQ(r.outcome, Outcome::unverified);
  EXPECT_NE(r.reason.find("boom"), std::string::npos);
  static const Check kSlurmOnly = {"security.slurm_only", Category::security, Severity::config, false, kSlurm, "t", "c",
                                   "d", "r", nullptr, [](const CheckContext&, const Check&) { return Verdict{}; }};
  auto na = run_check(kSlurmOnly, ctx);
  EXPECT_EQ(na.outcome, Outcome::not_applicable);
  EXPECT_NE(na.reason.find("slurm"), std::string::npos);
}

namespace {
cmax::audit::Finding judge_with(const cmax::audit::Floors& floors, std::string_view id, const Facts& f,
                                std::chrono::sys_days today) {
  cmax::core::FixedClock clock(today);
  for (const auto& c : cmax::audit::all_checks())
    if (c.id == id) return cmax::audit::run_check(c, {f, floors, cmax::audit::kStandalone, clock});
  return cmax::audit::Finding{};
}
}  // namespace

TEST(SecurityChecks, FloorsOlderThanTheirMaxAgeWarnAndSayHowToRefresh) {
  auto floors = cmax::audit::parse_floors(
      R"({"schema": "cmax.min-versions/1", "updated": "2026-10-01", "max_age_days": 30, "components": []})", "f.json");
  ASSERT_TRUE(floors) << floors.error().message;
  using namespace std::chrono;
  auto fresh = judge_with(*floors, "security.floors.fresh", {}, sys_days(year(2026) / 10 / 31));
  EXPECT_EQ(fresh.outcome, Outcome::pass) << fresh.reason;
  EXPECT_EQ(fresh.observed, "updated 2026-10-01 (30 days ago)");
  auto stale = judge_with(*floors, "security.floors.fresh", {}, sys_days(year(2026) / 11 / 1));
  EXPECT_EQ(stale.outcome, Outcome::warn);
  EXPECT_NE(stale.reason.find("31 days old (max_age_days 30)"), std::string::npos) << stale.reason;
  EXPECT_NE(stale.reason.find("cmax floors update"), std::string::npos) << stale.reason;
  // The built-in floors carry the documented age.
  auto builtin = cmax::audit::builtin_floors();
  ASSERT_TRUE(builtin);
  EXPECT_EQ(builtin->max_age_days, 45);
  auto undated = cmax::audit::parse_floors(R"({"schema": "cmax.min-versions/1", "components": []})", "u.json");
  ASSERT_TRUE(undated);
  EXPECT_EQ(judge_with(*undated, "security.floors.fresh", {}, sys_days(year(2026) / 11 / 1)).outcome, Outcome::unverified);
  EXPECT_FALSE(cmax::audit::parse_floors(R"({"max_age_days": "soon", "components": []})", "bad.json"));
  EXPECT_FALSE(cmax::audit::parse_floors(R"({"grace_days": -1, "components": []})", "bad.json"));
}

TEST(SecurityChecks, AFixReleasedInsideTheGraceWindowWarnsThenFails) {
  auto floors = cmax::audit::parse_floors(R"({"schema": "cmax.min-versions/1", "updated": "2026-11-30", "grace_days": 3,
      "components": [{"component": "runc", "kind": "security", "floor": "1.5.1", "date": "2026-12-01",
                      "fix_available": "2026-11-30", "source": "https://example.invalid/advisory"}]})",
                                          "g.json");
  ASSERT_TRUE(floors) << floors.error().message;
  Facts f;
  f.present("tool.runc.version", "1.5.0", "runc --version");
  using namespace std::chrono;
  auto day2 = judge_with(*floors, "security.runc.floor", f, sys_days(year(2026) / 12 / 2));
  EXPECT_EQ(day2.outcome, Outcome::warn) << day2.reason;
  EXPECT_NE(day2.reason.find("released 2 days ago on 2026-11-30, inside the 3-day rollout window"), std::string::npos)
      << day2.reason;
  auto day3 = judge_with(*floors, "security.runc.floor", f, sys_days(year(2026) / 12 / 3));
  EXPECT_EQ(day3.outcome, Outcome::fail) << day3.reason;
  // A version at the floor passes whatever the day.
  Facts ok;
  ok.present("tool.runc.version", "1.5.1", "runc --version");
  EXPECT_EQ(judge_with(*floors, "security.runc.floor", ok, sys_days(year(2026) / 12 / 2)).outcome, Outcome::pass);
}

TEST(CheckTable, DocsChecksListsEveryCheck) {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/docs/checks.md");
  ASSERT_TRUE(in) << "docs/checks.md";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (const auto& c : all_checks())
    EXPECT_NE(doc.find("| `" + std::string(c.id) + "` |"), std::string::npos)
        << c.id << " is not in docs/checks.md (regenerate the table from `cmax audit --list-checks`)";
}
