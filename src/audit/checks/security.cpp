// Security: every component at or above its version floor, kernel privilege-escalation CVEs,
// and the kernel's own hardening switches. ClusterMAX category "Security".

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "audit/checks/generic.h"
#include "audit/checks/tables.h"
#include "core/clock.h"
#include "core/strings.h"
#include "core/version.h"

namespace cmax::audit::checks {
namespace {

constexpr std::string_view kFloorsDoc = "docs/min-versions.md";

// The newest installed kernel package of the running flavour, and which of `cves` it fixes:
// {"linux-image-6.8.0-124-generic 6.8.0-124.124", {CVE-...}}; empty when none is newer.
std::pair<std::string, std::vector<std::string>> installed_fix(const CheckContext& ctx, const core::Version& running,
                                                              const std::string& distro,
                                                              const std::vector<std::string>& cves) {
  std::string_view rel = running.text;
  auto flavour = rel.substr(rel.rfind('-') == std::string_view::npos ? rel.size() : rel.rfind('-'));
  std::optional<core::Version> best;
  std::string best_name, best_pkg;
  for (auto item : core::split_any(ctx.facts.value_or("pkg.kernel_images"), " ")) {
    auto eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    auto name = item.substr(0, eq);
    if (!name.starts_with("linux-image-") || !name.ends_with(flavour)) continue;
    auto release = core::parse_version(name.substr(12));
    if (!release || core::compare_versions(*release, running) <= 0) continue;
    if (!best || core::compare_versions(*release, *best) > 0) {
      best = *release;
      best_name = std::string(name);
      best_pkg = std::string(item.substr(eq + 1));
    }
  }
  if (!best) return {};
  std::string source = kernel_source_package(distro, best->text, best_pkg);
  std::vector<std::string> fixed;
  for (const auto& id : cves)
    for (const auto& cve : ctx.floors.kernel_cves)
      if (cve.id == id && evaluate_kernel_cve(cve, *best, distro, best_pkg, source).status == KernelCveVerdict::Status::fixed)
        fixed.push_back(id);
  return {fmt::format("{} {}", best_name, best_pkg), fixed};
}

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
  std::string source = kernel_source_package(distro, release->text, package);
  const bool kvm_host = ctx.facts.is_present("kvm.device");
  // Kernels whose release keeps the base version of their series while the distro backports fixes
  // into it: Ubuntu's x.y.0 without /proc/version_signature, Red Hat's 5.14.0-427.42.1.el9_4. An
  // upstream comparison of that base says nothing; only the distro's own fixed package does.
  const bool ubuntu_without_upstream = distro.starts_with("ubuntu-") && package.empty() &&
                                       !ctx.facts.is_present("kernel.upstream_version");
  const bool rhel_family = release->text.find(".el") != std::string::npos;
  const bool frozen_base = ubuntu_without_upstream || rhel_family;
  std::vector<std::string> vulnerable, basis, unknown, upstream_only;
  for (const auto& cve : ctx.floors.kernel_cves) {
    if (cve.applies == "kvm-host" && !kvm_host) {
      basis.push_back(fmt::format("{}: not a KVM host (no /dev/kvm)", cve.id));
      continue;
    }
    auto kv = evaluate_kernel_cve(cve, upstream, distro, package, source);
    if (frozen_base && kv.basis.starts_with("upstream")) {
      kv.status = KernelCveVerdict::Status::unknown;
      kv.basis = rhel_family
                     ? fmt::format("{} is a Red Hat-family build that backports fixes into its base release, and no "
                                   "fixed {} package is recorded",
                                   release->text, distro.empty() ? std::string("distro") : distro)
                     : fmt::format("Ubuntu's release {} does not name the upstream stable release it is built from "
                                   "(no /proc/version_signature) and no package version is visible",
                                   release->text);
    }
    basis.push_back(fmt::format("{}: {}", cve.id, kv.basis));
    if (kv.status == KernelCveVerdict::Status::unknown) unknown.push_back(cve.id);
    if (kv.status == KernelCveVerdict::Status::vulnerable) {
      if (kv.basis.starts_with("upstream")) upstream_only.push_back(cve.id);
      vulnerable.push_back(cve.id);
      if (!cve.source.empty()) v.links.push_back(cve.source);
    }
  }
  v.cves = vulnerable;
  v.reason = fmt::format("{}", fmt::join(basis, "; "));
  std::size_t judged = 0;
  for (const auto& cve : ctx.floors.kernel_cves) judged += !(cve.applies == "kvm-host" && !kvm_host);
  if (vulnerable.empty() && !unknown.empty() && unknown.size() == judged) {
    v.outcome = Outcome::unverified;
    v.reason = fmt::format("no CVE could be judged for this kernel: {}", v.reason);
  } else if (vulnerable.empty()) {
    v.outcome = Outcome::pass;
    if (!unknown.empty())
      v.reason = fmt::format("not judged (no fix recorded for this kernel): {}; {}", fmt::join(unknown, ", "), v.reason);
  } else if (package.empty() && release->suffix.find('-') != std::string::npos &&
             upstream_only.size() == vulnerable.size()) {
    // A distro-built kernel whose package version we could not see may carry backports.
    v.outcome = Outcome::warn;
    v.reason = fmt::format("upstream version looks vulnerable to {}, but this is a distro build whose package "
                           "version is unknown (backports possible); {}",
                           fmt::join(vulnerable, ", "), v.reason);
  } else {
    v.outcome = Outcome::fail;
    if (auto [newer, fixed] = installed_fix(ctx, *release, distro, vulnerable); !fixed.empty())
      v.reason = fmt::format("the fix for {} is installed but not running: {} is installed, {} is running; reboot "
                             "into it (a security fail until then){}; {}",
                             fmt::join(fixed, ", "), newer, release->text,
                             fixed.size() < vulnerable.size() ? " and update the kernel for the rest" : "", v.reason);
  }
  v.evidence_source = "/proc/sys/kernel/osrelease, /proc/version";
  v.evidence_value = std::string(core::clip(ctx.facts.value_or("kernel.version_string"), 200));
  return v;
}

// Every NVIDIA adapter's firmware against the bulletin's CHIP.RELEASE trains: the worst one decides.
Verdict pred_nic_firmware(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find("rdma.mlx_fw");
  if (!f || f->status == FactStatus::absent)
    return verdict(Outcome::not_applicable, "no ConnectX/BlueField", {},
                   f ? f->detail : "no NVIDIA (Mellanox) RDMA adapter");
  if (f->status == FactStatus::error) return verdict(Outcome::unverified, {}, {}, f->detail);
  const ComponentFloor* floor = ctx.floors.find(check.component);
  if (!floor) return verdict(Outcome::unverified, f->value, {}, fmt::format("no floor for '{}' in {}", check.component, ctx.floors.origin));
  std::vector<std::string> bad, unsupported, good, unreadable;
  std::set<std::string> cves;
  for (auto item : core::split_any(f->value, " ")) {
    auto eq = item.find('=');
    std::string dev(item.substr(0, eq)), fw(eq == std::string_view::npos ? item : item.substr(eq + 1));
    auto v = core::parse_version(fw);
    if (!v) {
      unreadable.push_back(fmt::format("{} '{}'", dev, fw));
      continue;
    }
    auto fv = evaluate_floor(*floor, *v);
    for (const auto& c : fv.cves) cves.insert(c);
    switch (fv.status) {
      case FloorVerdict::Status::ok: good.push_back(fmt::format("{} {}", dev, fw)); break;
      case FloorVerdict::Status::below: bad.push_back(fmt::format("{} {} < {} (train {})", dev, fw, fv.floor, fv.train)); break;
      case FloorVerdict::Status::unsupported_train: unsupported.push_back(fmt::format("{} {}", dev, fw)); break;
    }
  }
  Verdict v;
  v.observed = f->value;
  v.expected = "every adapter at or above its firmware train's floor";
  if (!floor->source.empty()) v.links.push_back(floor->source);
  if (!bad.empty() || !unsupported.empty()) {
    v.outcome = Outcome::fail;
    std::vector<std::string> parts;
    if (!bad.empty()) parts.push_back(fmt::format("below the floor: {}", fmt::join(bad, "; ")));
    if (!unsupported.empty())
      parts.push_back(fmt::format("on a release line the bulletin does not list ({} {}): {}", floor->kind, floor->date,
                                  fmt::join(unsupported, "; ")));
    v.reason = fmt::format("{}", fmt::join(parts, "; "));
    v.cves.assign(cves.begin(), cves.end());
    return v;
  }
  if (!unreadable.empty()) {
    v.outcome = Outcome::unverified;
    v.reason = fmt::format("cannot compare firmware {}", fmt::join(unreadable, ", "));
    return v;
  }
  v.outcome = Outcome::pass;
  v.reason = fmt::format("{}", fmt::join(good, ", "));
  return v;
}

std::optional<Verdict> guard_amd_gpu(const CheckContext& ctx, const Check& check) {
  const Fact* n = ctx.facts.find("gpu.amd.count");
  if (n && n->status == FactStatus::error) return verdict(Outcome::unverified, {}, {}, n->detail);
  if (!n || n->value == "0") return verdict(Outcome::not_applicable, "no AMD GPU", {}, "no AMD GPU on the PCI bus");
  const Fact* f = ctx.facts.find(check.fact);
  if (!f) return verdict(Outcome::unverified, {}, {}, fmt::format("{} was not collected", check.fact));
  if (f->status == FactStatus::error) return verdict(Outcome::unverified, {}, {}, fmt::format("could not read {}: {}", f->source, f->detail));
  if (f->status == FactStatus::absent && check.id == "security.rocm.floor")
    return verdict(Outcome::not_applicable, "ROCm not installed", {}, f->detail);
  if (f->status == FactStatus::absent)
    return verdict(Outcome::unverified, std::string(ctx.facts.value_or("gpu.amd.models")), {},
                   fmt::format("{}: the fix cannot be judged from here", f->detail));
  return std::nullopt;
}

// ROCm per AMD Instinct model: the bulletins fix each model in a different release.
Verdict pred_rocm(const CheckContext& ctx, const Check& check) {
  const ComponentFloor* floor = ctx.floors.find(check.component);
  std::string raw(ctx.facts.value_or(check.fact));
  std::string ver = raw.substr(0, raw.find('-'));  // "6.4.2-120": the build number is not a pre-release
  auto v = core::parse_version(ver);
  if (!v) return verdict(Outcome::unverified, raw, {}, fmt::format("cannot compare ROCm '{}'", raw));
  if (!floor) return verdict(Outcome::unverified, raw, {}, fmt::format("no floor for '{}' in {}", check.component, ctx.floors.origin));
  std::vector<std::string> below, judged, unlisted;
  std::set<std::string> cves;
  for (auto part : core::split_any(ctx.facts.value_or("gpu.amd.models"), ",")) {
    auto model = std::string(core::trim(part.substr(0, part.rfind(" x"))));
    auto it = floor->models.find(model);
    if (it == floor->models.end()) {
      unlisted.push_back(model);
      continue;
    }
    judged.push_back(fmt::format("{} >= {}", model, it->second.text));
    if (core::compare_versions(*v, it->second) < 0) below.push_back(fmt::format("{} needs {}", model, it->second.text));
  }
  Verdict out = verdict(Outcome::pass, fmt::format("ROCm {} on {}", raw, ctx.facts.value_or("gpu.amd.models")),
                        judged.empty() ? std::string("the floor of each Instinct model") : fmt::format("{}", fmt::join(judged, ", ")));
  if (!floor->source.empty()) out.links.push_back(floor->source);
  if (!below.empty()) {
    out.outcome = Outcome::fail;
    out.reason = fmt::format("ROCm {} is below the fix for {} ({} {})", ver, fmt::join(below, ", "), floor->kind, floor->date);
    for (const auto& c : floor->cves) out.cves.push_back(c.id);
  } else if (judged.empty()) {
    out.outcome = Outcome::not_applicable;
    out.reason = fmt::format("no ROCm floor is recorded for {}", fmt::join(unlisted, ", "));
  } else if (!unlisted.empty()) {
    out.reason = fmt::format("no ROCm floor is recorded for {}", fmt::join(unlisted, ", "));
  }
  return out;
}

// dcgm-exporter's release is the second half of "<DCGM>-<exporter>" (image tag 4.5.3-4.8.2).
Verdict pred_exporter_floor(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find(check.fact);
  std::string value = f->value;
  std::string upstream = f->detail == "distro package" ? core::split_package_version(value).upstream : value;
  auto dash = upstream.find('-');
  if (dash != std::string::npos && core::parse_version(upstream.substr(0, dash)) && core::parse_version(upstream.substr(dash + 1)))
    upstream = upstream.substr(dash + 1);
  Facts one;
  one.present(std::string(check.fact), upstream, f->source);
  CheckContext sub{one, ctx.floors, ctx.harness, ctx.clock};
  Verdict v = pred_version_floor(sub, check);
  v.observed = value;
  return v;
}

// The floors themselves: a bulletin published after `updated` is not judged by any floor check.
Verdict pred_floors_fresh(const CheckContext& ctx, const Check&) {
  const auto& fl = ctx.floors;
  Verdict v;
  v.evidence_source = fl.origin;
  v.evidence_value = fl.updated.empty() ? std::string("no 'updated' date") : fmt::format("updated {}", fl.updated);
  auto age = core::days_since(fl.updated, ctx.clock.now());
  if (!age) {
    v.outcome = Outcome::unverified;
    v.observed = fl.updated.empty() ? "no date" : fl.updated;
    v.reason = fmt::format("{} has no valid 'updated' date (YYYY-MM-DD): how current its floors are is unknown; "
                           "run `cmax floors update` and write the result",
                           fl.origin);
    return v;
  }
  v.observed = fmt::format("updated {} ({} days ago)", fl.updated, *age);
  v.expected = fmt::format("updated within {} days (max_age_days)", fl.max_age_days);
  if (*age > fl.max_age_days) {
    v.outcome = Outcome::warn;
    v.reason = fmt::format(
        "the version floors in {} are {} days old (max_age_days {}): a security bulletin published since {} is not "
        "judged by any floor check; run `cmax floors update --fetch --write FILE` and audit with --min-versions FILE",
        fl.origin, *age, fl.max_age_days, fl.updated);
  } else if (*age < -1) {
    v.outcome = Outcome::warn;
    v.reason = fmt::format("the floors say they were updated {}, {} days after this host's clock: check the clock",
                           fl.updated, -*age);
  } else {
    v.outcome = Outcome::pass;
  }
  return v;
}

const Check kChecks[] = {
    {"security.floors.fresh", Category::security, Severity::version, false, kAnyHarness,
     "The version floors this audit uses are current",
     "Security: components judged against the latest published fixes",
     "Reads the floors file's 'updated' date and compares its age with its max_age_days (45 in the built-in data). "
     "Every floor check judges only the bulletins published before that date.",
     "Run `cmax floors update --fetch --write floors.json` (or --feeds DIR offline) and audit with "
     "--min-versions floors.json; or upgrade cmax.",
     nullptr, pred_floors_fresh, {}, {}, {}, kFloorsDoc},
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
    {"security.dcgm_exporter.floor", Category::security, Severity::version, true, kAnyHarness,
     "dcgm-exporter at or above the security floor", "Security: GPU monitoring exporter patched (NVIDIA bulletin 5857)",
     "Reads `dcgm-exporter --version` (or its package) and compares the exporter release (the part after the DCGM "
     "release in \"4.5.3-4.8.2\") with the floor.",
     "Upgrade dcgm-exporter (image nvcr.io/nvidia/k8s/dcgm-exporter) to the floor or newer.", guard_fact,
     pred_exporter_floor, "tool.dcgm_exporter.version", "dcgm-exporter", {}, kFloorsDoc},
    {"security.connectx_firmware.floor", Category::security, Severity::version, true, kAnyHarness,
     "ConnectX / BlueField firmware at or above the security floor",
     "Security: NIC firmware patched (NVIDIA networking bulletin)",
     "Reads fw_ver of every NVIDIA (Mellanox) RDMA adapter in /sys/class/infiniband and compares each with the "
     "floor of its CHIP.RELEASE train.",
     "Update the adapters' firmware (mlxfwmanager / mstflint, or the vendor's bundle) to the floor of their train.",
     guard_rdma, pred_nic_firmware, "rdma.device_count", "connectx-firmware", {}, kFloorsDoc},
    {"security.amd_gpu_driver.floor", Category::security, Severity::version, true, kAnyHarness,
     "AMD GPU driver at or above the security floor", "Security: AMD GPU kernel driver patched (AMD-SB-6034)",
     "Reads the amdgpu module's version (/sys/module/amdgpu/version, set by AMD's amdgpu-dkms) and compares it with "
     "the floor.",
     "Install the AMD GPU driver release named in the bulletin (amdgpu-install / amdgpu-dkms) and reboot.",
     guard_amd_gpu, pred_version_floor, "gpu.amd.driver.version", "amd-gpu-driver", {}, kFloorsDoc},
    {"security.rocm.floor", Category::security, Severity::version, true, kAnyHarness,
     "ROCm at or above the security floor of each Instinct model",
     "Security: ROCm patched per AMD Instinct model (AMD-SB-6024, AMD-SB-6027)",
     "Reads /opt/rocm/.info/version and compares it with the floor the bulletins give each AMD Instinct model on the "
     "PCI bus.",
     "Upgrade ROCm to the release the bulletin names for this model.", guard_amd_gpu, pred_rocm, "rocm.version",
     "rocm", {}, kFloorsDoc},
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
