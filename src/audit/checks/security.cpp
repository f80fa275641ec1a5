// Security: every component at or above its version floor, kernel privilege-escalation CVEs,
// and the kernel's own hardening switches. ClusterMAX category "Security".

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/checks/generic.h"
#include "audit/checks/tables.h"
#include "core/strings.h"
#include "core/version.h"

namespace cmax::audit::checks {
namespace {

constexpr std::string_view kFloorsDoc = "docs/min-versions.md";

Verdict pred_kernel_cves(const CheckContext& ctx, const Check&) {
  auto release = core::parse_version(ctx.facts.value_or("kernel.release"));
  if (!release)
    return verdict(Outcome::unverified, std::string(ctx.facts.value_or("kernel.release")), {},
                   fmt::format("cannot parse the kernel release: {}", release.error().message));
  if (ctx.floors.kernel_cves.empty())
    return verdict(Outcome::unverified, release->text, {}, fmt::format("no kernel CVEs in {}", ctx.floors.origin));
  std::string distro(ctx.facts.value_or("os.distro"));
  std::string package(ctx.facts.value_or("kernel.package_version"));
  // Where the distro names the upstream release behind its kernel, judge that, not "5.15.0".
  core::Version upstream = *release;
  if (auto u = core::parse_version(ctx.facts.value_or("kernel.upstream_version")); u) upstream = std::move(*u);
  Verdict v;
  v.observed = package.empty() ? release->text : fmt::format("{} (package {})", release->text, package);
  v.expected = "no known privilege-escalation CVE";
  std::vector<std::string> vulnerable, basis;
  for (const auto& cve : ctx.floors.kernel_cves) {
    auto kv = evaluate_kernel_cve(cve, upstream, distro, package);
    basis.push_back(fmt::format("{}: {}", cve.id, kv.basis));
    if (kv.status == KernelCveVerdict::Status::vulnerable) {
      vulnerable.push_back(cve.id);
      if (!cve.source.empty()) v.links.push_back(cve.source);
    }
  }
  v.cves = vulnerable;
  v.reason = fmt::format("{}", fmt::join(basis, "; "));
  if (vulnerable.empty()) {
    v.outcome = Outcome::pass;
  } else if (package.empty() && release->suffix.find('-') != std::string::npos) {
    // A distro-built kernel whose package version we could not see may carry backports.
    v.outcome = Outcome::warn;
    v.reason = fmt::format("upstream version looks vulnerable to {}, but this is a distro build whose package "
                           "version is unknown (backports possible); {}",
                           fmt::join(vulnerable, ", "), v.reason);
  } else {
    v.outcome = Outcome::fail;
  }
  v.evidence_source = "/proc/sys/kernel/osrelease, /proc/version";
  v.evidence_value = std::string(core::clip(ctx.facts.value_or("kernel.version_string"), 200));
  return v;
}

const Check kChecks[] = {
    {"security.nvidia_driver.floor", Category::security, Severity::version, true, kAnyHarness,
     "GPU driver branch and version at or above the security floor",
     "Security: GPU driver per branch at or above NVIDIA's latest security bulletin",
     "Reads the loaded NVIDIA kernel driver version from /proc/driver/nvidia/version and compares it with the "
     "floor of its branch (R535, R550, R570, R580...). A branch with no listed fixes is unsupported.",
     "Upgrade the driver to the floor of its branch or move to a supported branch; see NVIDIA's security bulletins.",
     guard_gpu, pred_version_floor, "gpu.driver.version", "nvidia-driver", {}, kFloorsDoc},
    {"security.nvidia_container_toolkit.floor", Category::security, Severity::version, true, kAnyHarness,
     "NVIDIA Container Toolkit at or above the security floor",
     "Security: NVIDIA Container Toolkit current (container escapes CVE-2024-0132, CVE-2025-23266)",
     "Reads the version from nvidia-ctk (or nvidia-container-cli, or the package) and compares it with the floor.",
     "Upgrade nvidia-container-toolkit and libnvidia-container to the floor or newer.", guard_fact,
     pred_version_floor, "tool.nvidia_ctk.version", "nvidia-container-toolkit", {}, kFloorsDoc},
    {"security.runc.floor", Category::security, Severity::version, true, kAnyHarness,
     "runc at or above the security floor", "Security: container runtime patched (CVE-2024-21626, 2025 runc fixes)",
     "Reads `runc --version` (or the package) and compares it with the floor of its train.",
     "Upgrade runc to the floor of its train (1.2.8, 1.3.3 or newer).", guard_fact, pred_version_floor,
     "tool.runc.version", "runc", {}, kFloorsDoc},
    {"security.containerd.floor", Category::security, Severity::version, true, kAnyHarness,
     "containerd at or above the security floor", "Security: container runtime patched",
     "Reads `containerd --version` (or the package) and compares it with the floor of its train.",
     "Upgrade containerd to the floor of its train.", guard_fact, pred_version_floor, "tool.containerd.version",
     "containerd", {}, kFloorsDoc},
    {"security.docker.floor", Category::security, Severity::version, true, kAnyHarness,
     "Docker Engine at or above the security floor", "Security: container engine patched",
     "Reads `docker --version` (or the package) and compares it with the floor of its train.",
     "Upgrade Docker Engine to the floor of its train.", guard_fact, pred_version_floor, "tool.docker.version",
     "docker", {}, kFloorsDoc},
    {"security.slurm.floor", Category::security, Severity::version, true, kAnyHarness,
     "Slurm at or above the security floor", "Security: cluster software has no known CVEs (Slurm CVE-2023-49933..8, CVE-2025-43904)",
     "Reads the Slurm version (sinfo/slurmd --version, or the package) and compares it with its train's floor.",
     "Upgrade Slurm to the floor of its release train or a newer train.", guard_fact, pred_version_floor,
     "tool.slurm.version", "slurm", {}, kFloorsDoc},
    {"security.munge.floor", Category::security, Severity::version, true, kAnyHarness,
     "MUNGE at or above the security floor", "Security: cluster authentication patched (CVE-2026-25506)",
     "Reads `munged --version` (or the package) and compares it with the floor.",
     "Upgrade munge to the floor or newer and restart munged on every node.", guard_fact, pred_version_floor,
     "tool.munge.version", "munge", {}, kFloorsDoc},
    {"security.dcgm.floor", Category::security, Severity::version, true, kAnyHarness,
     "DCGM at or above the security floor", "Security: GPU management software patched",
     "Reads `dcgmi --version` (or the package) and compares it with the floor.",
     "Upgrade datacenter-gpu-manager to the floor or newer.", guard_fact, pred_version_floor, "tool.dcgm.version",
     "dcgm", {}, kFloorsDoc},
    {"security.kernel.cves", Category::security, Severity::version, true, kAnyHarness,
     "Running kernel free of known privilege-escalation CVEs",
     "Security: kernel patched (Dirty Pipe CVE-2022-0847, CVE-2023-0386, CVE-2024-1086)",
     "Compares the running kernel with each kernel CVE's fixed versions: the distro package version where the "
     "distro is known (distros backport), otherwise the upstream stable series.",
     "Install the distro's fixed kernel package and reboot into it.", guard_fact, pred_kernel_cves,
     "kernel.release"},
    {"security.kptr_restrict", Category::security, Severity::config, false, kAnyHarness,
     "Kernel pointers hidden from unprivileged users", "Security: kernel hardening (kernel.kptr_restrict >= 1)",
     "kernel.kptr_restrict = 0 prints kernel addresses in /proc to every user, which helps kernel exploits.",
     "sysctl -w kernel.kptr_restrict=1 and persist it in /etc/sysctl.d/.", guard_fact, pred_int_bound,
     "sysctl.kernel.kptr_restrict", {}, "min:1"},
    {"security.aslr", Category::security, Severity::config, true, kAnyHarness,
     "Full address-space layout randomisation", "Security: kernel hardening (kernel.randomize_va_space = 2)",
     "kernel.randomize_va_space below 2 leaves the heap or everything at fixed addresses.",
     "sysctl -w kernel.randomize_va_space=2 and persist it in /etc/sysctl.d/.", guard_fact, pred_int_bound,
     "sysctl.kernel.randomize_va_space", {}, "min:2"},
    {"security.unprivileged_bpf", Category::security, Severity::config, false, kAnyHarness,
     "Unprivileged eBPF disabled", "Security: kernel hardening (kernel.unprivileged_bpf_disabled >= 1)",
     "Unprivileged eBPF has been the entry point of several kernel privilege escalations.",
     "sysctl -w kernel.unprivileged_bpf_disabled=2 and persist it in /etc/sysctl.d/.", guard_fact,
     pred_int_bound, "sysctl.kernel.unprivileged_bpf_disabled", {}, "min:1"},
    {"security.dmesg_restrict", Category::security, Severity::config, false, kAnyHarness,
     "Kernel log restricted to privileged users", "Security: tenants cannot read other tenants' kernel messages",
     "kernel.dmesg_restrict = 0 lets any user read the kernel log, including other jobs' faults and addresses.",
     "sysctl -w kernel.dmesg_restrict=1 and persist it in /etc/sysctl.d/.", guard_fact, pred_int_bound,
     "sysctl.kernel.dmesg_restrict", {}, "min:1"},
    {"security.suid_dumpable", Category::security, Severity::config, false, kAnyHarness,
     "Set-uid programs do not dump core", "Security: kernel hardening (fs.suid_dumpable = 0)",
     "fs.suid_dumpable = 1 lets privileged programs leave readable core files.",
     "sysctl -w fs.suid_dumpable=0 (or 2 with a safe core_pattern).", guard_fact, pred_int_bound,
     "sysctl.fs.suid_dumpable", {}, "not:1"},
};

}  // namespace

std::span<const Check> security_checks() { return kChecks; }

}  // namespace cmax::audit::checks
