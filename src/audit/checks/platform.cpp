// How the platform under the GPUs is set up for them: coherent GPU memory on Grace systems kept out
// of the OS's memory (CDMM), the kubelet's CPU manager, vBoost under the tenant's control, and the
// Arm SMMU's command-queue virtualisation in Grace guests. ClusterMAX categories "Orchestration"
// and "Networking".

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/checks/generic.h"
#include "audit/checks/tables.h"
#include "core/strings.h"

namespace cmax::audit::checks {
namespace {

constexpr std::uint64_t kHbmMinKb = 64ull * 1024 * 1024;  // smaller than any coherent GPU's HBM

bool coherent_platform(const CheckContext& ctx) {
  std::string models = core::to_lower(ctx.facts.value_or("gpu.nvidia.models"));
  for (const char* m : {"gh200", "gb200", "gb300", "grace"})
    if (models.find(m) != std::string::npos) return true;
  return false;
}

// Grace-coherent HBM onlined as CPU-less NUMA nodes is system memory to the OS: the kubelet and
// the page allocator hand it out, and the GPU's memory fills with host pages. CDMM (driver-managed,
// NVreg_CoherentGPUMemoryMode=driver) keeps it the driver's.
Verdict pred_coherent_memory(const CheckContext& ctx, const Check&) {
  const Fact* numa = ctx.facts.find("numa.memory_only_nodes");
  constexpr std::string_view kExpected = "GPU HBM not onlined as system memory (CDMM driver mode)";
  std::vector<std::string> hbm;
  std::uint64_t total_kb = 0;
  if (numa && numa->status == FactStatus::present)
    for (auto entry : core::split_any(numa->value, " ")) {
      auto at = entry.find("mem_kb=");
      auto kb = at == std::string_view::npos ? std::nullopt : core::parse_uint(entry.substr(at + 7));
      if (kb && *kb >= kHbmMinKb) {
        hbm.emplace_back(entry.substr(0, entry.find(':')));
        total_kb += *kb;
      }
    }
  std::string mode(ctx.facts.value_or("gpu.params.coherent_memory_mode"));
  if (!coherent_platform(ctx)) {
    if (!hbm.empty() && ctx.facts.value_or("cpu.arch") == "aarch64" && !ctx.facts.is_present("gpu.nvidia.models"))
      return verdict(Outcome::unverified, fmt::format("{} CPU-less NUMA node(s) of HBM size", hbm.size()),
                     std::string(kExpected), "the GPU model could not be read to tell whether this is a coherent Grace system");
    return verdict(Outcome::not_applicable, std::string(ctx.facts.value_or("gpu.nvidia.models", "not Grace")), {},
                   "not a Grace-coherent GPU system (GH200, GB200, GB300)");
  }
  if (numa && numa->status == FactStatus::error) return verdict(Outcome::unverified, {}, std::string(kExpected), numa->detail);
  std::string observed = fmt::format("CoherentGPUMemoryMode={}, {} HBM-size CPU-less NUMA node(s)",
                                     mode.empty() ? "unknown" : mode, hbm.size());
  if (!hbm.empty())
    return verdict(Outcome::warn, observed, std::string(kExpected),
                   fmt::format("{} ({:.0f} GiB) of GPU memory is online as system memory: the kernel and the kubelet "
                               "count it as node memory and place ordinary allocations in HBM; set "
                               "NVreg_CoherentGPUMemoryMode=driver (CDMM, R580+)",
                               fmt::join(hbm, " "), static_cast<double>(total_kb) / (1024.0 * 1024.0)));
  return verdict(Outcome::pass, observed, std::string(kExpected),
                 mode == "driver" ? "CDMM: the driver owns GPU memory"
                                  : "no HBM-size CPU-less NUMA node is online (the driver's mode was not read)");
}

Verdict pred_cpu_manager(const CheckContext& ctx, const Check& check) {
  std::string policy(ctx.facts.value_or(check.fact));
  if (policy == "static") return verdict(Outcome::pass, policy, "static");
  return verdict(Outcome::warn, policy, "static",
                 "with the 'none' policy, GPU pods' CPU threads float across NUMA nodes and share cores with other "
                 "pods: set cpuManagerPolicy: static (with reserved CPUs) so Guaranteed pods get whole cores");
}

std::optional<Verdict> guard_kubelet(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find(check.fact);
  if (!f) return verdict(Outcome::unverified, {}, {}, "the kubelet's state was not read");
  if (f->status == FactStatus::error) return verdict(Outcome::unverified, {}, {}, fmt::format("{}: {}", f->source, f->detail));
  if (f->status == FactStatus::absent) return verdict(Outcome::not_applicable, "no kubelet", {}, f->detail);
  return std::nullopt;
}

// vBoost: read-only, cmax never changes a clock setting. The tenant can set it when the GPU lists
// the slider and the tenant has root on the node.
Verdict pred_vboost(const CheckContext& ctx, const Check& check) {
  std::string models = core::to_lower(ctx.facts.value_or("gpu.nvidia.models"));
  if (models.find("b300") != std::string::npos)
    return verdict(Outcome::not_applicable, std::string(ctx.facts.value_or("gpu.nvidia.models")), {},
                   "B300 / GB300 expose no vBoost slider to tune");
  const Fact* f = ctx.facts.find(check.fact);
  if (!f || f->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, "vBoost settable by the tenant", f ? f->detail : "nvidia-smi was not run");
  if (f->status == FactStatus::absent) return verdict(Outcome::not_applicable, "no vboost slider", {}, f->detail);
  bool root = ctx.facts.is_present("access.sudo_nopasswd") || ctx.facts.value_or("access.uid") == "0";
  if (root)
    return verdict(Outcome::pass, f->value, "vBoost settable by the tenant",
                   "the GPUs list a vboost slider and the tenant has root (nvidia-smi boost-slider --vboost N)");
  return verdict(Outcome::warn, f->value, "vBoost settable by the tenant",
                 "the GPUs list a vboost slider, but the tenant has no root to set it (boost-slider needs root)");
}

// Arm SMMUv3 in a Grace guest: without CMDQV / VCMDQ, every guest IOMMU invalidation traps to one
// host command queue, which throttles GPU and RDMA DMA mapping.
Verdict pred_smmu_cmdqv(const CheckContext& ctx, const Check&) {
  std::string arch(ctx.facts.value_or("cpu.arch"));
  constexpr std::string_view kExpected = "CMDQV / VCMDQ exposed to the guest";
  if (arch.empty()) return verdict(Outcome::unverified, {}, std::string(kExpected), "the CPU architecture is unknown");
  if (arch != "aarch64") return verdict(Outcome::not_applicable, arch, {}, "Arm SMMU virtualisation applies to Arm guests");
  const Fact* type = ctx.facts.find("virt.type");
  if (type && type->status == FactStatus::present && type->value == "none")
    return verdict(Outcome::not_applicable, "bare metal", {}, "bare metal: no guest invalidations to trap");
  if (!type || type->status != FactStatus::present)
    return verdict(Outcome::unverified, {}, std::string(kExpected), "whether this Arm host is a guest is unknown");
  if (ctx.facts.is_present("smmu.cmdqv"))
    return verdict(Outcome::pass, std::string(ctx.facts.value_or("smmu.cmdqv")), std::string(kExpected));
  std::string units(ctx.facts.value_or("iommu.units"));
  bool smmu3 = units.find("smmu3") != std::string::npos;
  if (!smmu3)
    return verdict(Outcome::unverified, units.empty() ? "no IOMMU unit" : units, std::string(kExpected),
                   "no Arm SMMUv3 is visible to this guest");
  if (!coherent_platform(ctx) && ctx.facts.value_or("host.product").find("Grace") == std::string_view::npos)
    return verdict(Outcome::unverified, units, std::string(kExpected),
                   "SMMUv3 without CMDQV, but this guest could not be identified as Grace, the only platform with it");
  return verdict(Outcome::warn, units, std::string(kExpected),
                 "the guest's SMMUv3 has no CMDQV / VCMDQ: its invalidations serialise through the host's command queue");
}

const Check kChecks[] = {
    {"orchestration.gpu.coherent_memory", Category::orchestration, Severity::config, false, kAnyHarness,
     "Grace-coherent GPU memory is not system memory (CDMM)",
     "Orchestration: GH200 / GB200 / GB300 HBM kept out of the OS's memory (CDMM)",
     "On a Grace-coherent GPU system, reads the NUMA nodes (CPU-less nodes of HBM size are GPU memory onlined as "
     "system memory) and the driver's CoherentGPUMemoryMode.",
     "Load the driver with NVreg_CoherentGPUMemoryMode=driver (R580+), especially on Kubernetes nodes.",
     guard_gpu_only, pred_coherent_memory, "numa.memory_only_nodes", {}, {},
     "https://docs.nvidia.com/datacenter/tesla/tesla-release-notes-580/"},
    {"orchestration.kubelet.cpu_manager", Category::orchestration, Severity::config, false, kKubernetes,
     "The kubelet pins GPU pods to whole cores (CPU manager static)",
     "Orchestration: NUMA-aware CPU allocation for GPU pods",
     "Reads /var/lib/kubelet/cpu_manager_state (policyName), else cpuManagerPolicy in the kubelet's config.",
     "Set cpuManagerPolicy: static with reservedSystemCPUs in the kubelet config, drain, remove "
     "cpu_manager_state and restart the kubelet.",
     guard_kubelet, pred_cpu_manager, "kubelet.cpu_manager_policy", {}, {},
     "https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/"},
    {"reliability.gpu.vboost", Category::reliability, Severity::config, false, kAnyHarness,
     "The tenant can set the GPUs' vBoost",
     "Reliability: tenant control of GPU power/clock sliders (vBoost)",
     "Runs `nvidia-smi boost-slider -l` (read-only) for a vboost slider and looks for root (uid 0 or NOPASSWD "
     "sudo); never sets it.",
     "Give the tenant root on dedicated nodes, or a sudo rule for nvidia-smi boost-slider.", guard_gpu_only,
     pred_vboost, "gpu.vboost"},
    {"networking.arm_smmu.cmdqv", Category::networking, Severity::config, false, kAnyHarness,
     "Arm SMMU command queues are virtualised for the guest (CMDQV)",
     "Networking: IOMMU virtualisation fit for GPU and RDMA DMA in Grace VMs",
     "In an Arm guest, looks for the tegra241-cmdqv driver bound to a device (VCMDQ exposed) next to the SMMUv3 "
     "units in /sys/class/iommu.",
     "Expose CMDQV to the guest (a hypervisor with VCMDQ passthrough, e.g. QEMU iommufd with arm-smmuv3 accel).",
     nullptr, pred_smmu_cmdqv, "iommu.units"},
};

}  // namespace

std::span<const Check> platform_checks() { return kChecks; }

}  // namespace cmax::audit::checks
