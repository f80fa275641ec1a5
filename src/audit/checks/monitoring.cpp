// Monitoring: DCGM is installed and its host engine runs; users can profile (ncu/nsys).
// ClusterMAX category "Monitoring".

#include "audit/checks/generic.h"
#include "audit/checks/tables.h"

namespace cmax::audit::checks {
namespace {

std::optional<Verdict> guard_dcgm_installed(const CheckContext& ctx, const Check& check) {
  if (auto g = guard_gpu_only(ctx, check)) return g;
  if (!ctx.facts.is_present("tool.dcgm.version"))
    return verdict(Outcome::not_applicable, "DCGM not installed", {}, "DCGM is not installed (see monitoring.dcgm.present)");
  const Fact* f = ctx.facts.find(check.fact);
  if (f && f->status == FactStatus::error) return verdict(Outcome::unverified, {}, {}, f->detail);
  return std::nullopt;
}

const Check kChecks[] = {
    {"monitoring.dcgm.present", Category::monitoring, Severity::missing, false, kAnyHarness,
     "DCGM is installed on the GPU node", "Monitoring: DCGM health checks and metrics",
     "Looks for dcgmi or the datacenter-gpu-manager package.",
     "Install datacenter-gpu-manager (DCGM 4 for current drivers) and enable nvidia-dcgm.service.",
     guard_gpu_only, pred_present, "tool.dcgm.version", {}, "warn"},
    {"monitoring.dcgm.hostengine", Category::monitoring, Severity::missing, false, kAnyHarness,
     "The DCGM host engine is running", "Monitoring: DCGM watches active (exporter and health checks need it)",
     "Looks for an nv-hostengine process.", "systemctl enable --now nvidia-dcgm.service", guard_dcgm_installed,
     pred_present, "proc.nv-hostengine", {}, "warn"},
    {"monitoring.perf_event_paranoid", Category::monitoring, Severity::config, false, kAnyHarness,
     "Users can profile their jobs (perf_event_paranoid <= 1)", "Monitoring: ncu and nsys usable by users",
     "kernel.perf_event_paranoid above 1 stops Nsight Systems CPU sampling and perf for non-root users.",
     "sysctl -w kernel.perf_event_paranoid=1 and persist it in /etc/sysctl.d/.", guard_fact, pred_int_bound,
     "sysctl.kernel.perf_event_paranoid", {}, "max:1"},
};

}  // namespace

std::span<const Check> monitoring_checks() { return kChecks; }

}  // namespace cmax::audit::checks
