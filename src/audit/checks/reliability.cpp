// Reliability: no GPU faults in the recent kernel log, the GPU daemons that keep a node healthy
// are running, and the kernel does not add jitter. ClusterMAX category "Reliability".

#include <fmt/format.h>

#include "audit/checks/generic.h"
#include "audit/checks/tables.h"
#include "core/strings.h"

namespace cmax::audit::checks {
namespace {

// Xids that an application causes or that need no action (NVIDIA's catalog: RESTART_APP/IGNORE).
// A node that logged only these is not itself faulty; anything else points at the hardware.
constexpr unsigned kApplicationXids[] = {13, 31, 43, 45, 63, 94};

Verdict pred_no_recent_xid(const CheckContext& ctx, const Check& check) {
  std::string_view count_text = ctx.facts.value_or(check.fact);
  auto count = core::parse_uint(count_text);
  if (!count) return verdict(Outcome::unverified, std::string(count_text), {}, "Xid count unparseable");
  const Fact* f = ctx.facts.find(check.fact);
  std::string window = f ? f->detail : std::string();
  if (*count == 0) return verdict(Outcome::pass, "no Xid", "no Xid in the last 7 days", window);
  std::string summary(ctx.facts.value_or("kernel_log.xid_summary"));
  bool hardware = false;
  for (auto part : core::split_any(summary, ";")) {
    auto t = core::trim(part);
    if (!t.starts_with("Xid ")) continue;
    auto code = core::parse_uint(t.substr(4, t.find(' ', 4) - 4));
    bool app = false;
    for (unsigned a : kApplicationXids)
      if (code && *code == a) app = true;
    if (!app) hardware = true;
  }
  Verdict v = verdict(hardware ? Outcome::fail : Outcome::warn, summary, "no Xid in the last 7 days",
                      fmt::format("{} Xid line(s); {}{}", *count, window,
                                  hardware ? "" : "; only application-class Xids (13/31/43/45/63/94)"));
  v.evidence_value = std::string(ctx.facts.value_or("kernel_log.xid_sample"));
  return v;
}

std::optional<Verdict> guard_nvswitch(const CheckContext& ctx, const Check& check) {
  auto n = core::parse_uint(ctx.facts.value_or("gpu.nvswitch.count", "0"));
  if (!n || *n == 0)
    return verdict(Outcome::not_applicable, "no NVSwitch", {}, "no NVSwitch on the PCI bus (not an HGX/NVL node)");
  const Fact* f = ctx.facts.find(check.fact);
  if (f && f->status == FactStatus::error) return verdict(Outcome::unverified, {}, {}, f->detail);
  return std::nullopt;
}

std::optional<Verdict> guard_gpu_daemon(const CheckContext& ctx, const Check& check) {
  if (auto g = guard_gpu_only(ctx, check)) return g;
  const Fact* f = ctx.facts.find(check.fact);
  if (f && f->status == FactStatus::error) return verdict(Outcome::unverified, {}, {}, f->detail);
  return std::nullopt;
}

Verdict pred_governor(const CheckContext& ctx, const Check& check) {
  std::string governors(ctx.facts.value_or(check.fact));
  bool ok = governors == "performance";
  return verdict(ok ? Outcome::pass : Outcome::warn, governors, "performance",
                 ok ? "" : "a power-saving governor adds latency to CPU-bound phases (data loading, NCCL proxies)");
}

const Check kChecks[] = {
    {"reliability.xid_recent", Category::reliability, Severity::config, false, kAnyHarness,
     "No GPU Xid errors in the kernel log of the last 7 days", "Reliability: GPUs healthy (no recent Xid faults)",
     "Counts NVRM Xid lines in /dev/kmsg (or the syslog files of a host root) within the last 7 days; hardware "
     "Xids fail, application-class Xids warn.",
     "Investigate with `cmax scan`; follow NVIDIA's Xid catalog action (reset GPU, reboot, RMA).", guard_fact,
     pred_no_recent_xid, "kernel_log.xid_count"},
    {"reliability.persistenced", Category::reliability, Severity::missing, false, kAnyHarness,
     "nvidia-persistenced is running", "Reliability: GPU driver state kept between jobs",
     "Without the persistence daemon the driver tears down and re-initialises GPUs between jobs, which slows "
     "job start and hides faults until the next job.",
     "Enable and start nvidia-persistenced.service.", guard_gpu_daemon, pred_present, "proc.nvidia-persiste", {},
     "warn"},
    {"reliability.fabricmanager", Category::reliability, Severity::missing, true, kAnyHarness,
     "NVIDIA Fabric Manager runs on an NVSwitch node", "Reliability: NVLink fabric up on HGX nodes",
     "On HGX nodes with NVSwitches, CUDA cannot use the GPUs until Fabric Manager has configured the fabric.",
     "Install the nvidia-fabricmanager package matching the driver and start nvidia-fabricmanager.service.",
     guard_nvswitch, pred_present, "proc.nv-fabricmanage", {}, "fail"},
    {"reliability.numa_balancing", Category::reliability, Severity::config, false, kAnyHarness,
     "Automatic NUMA balancing is off", "Reliability: consistent performance (no page migration jitter)",
     "kernel.numa_balancing migrates pages behind pinned GPU and NIC buffers and adds jitter to collectives.",
     "sysctl -w kernel.numa_balancing=0 and persist it in /etc/sysctl.d/.", guard_fact, pred_int_bound,
     "sysctl.kernel.numa_balancing", {}, "eq:0"},
    {"reliability.cpu_governor", Category::reliability, Severity::config, false, kAnyHarness,
     "CPU frequency governor is 'performance'", "Reliability: consistent performance",
     "Reads every CPU's cpufreq scaling governor.",
     "Set the governor to performance (cpupower frequency-set -g performance) or in the BIOS.", guard_fact,
     pred_governor, "cpu.governors"},
};

}  // namespace

std::span<const Check> reliability_checks() { return kChecks; }

}  // namespace cmax::audit::checks
