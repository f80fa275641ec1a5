#include "health/gpu_smi_judge.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

// Sources of the rules (read 2026-12):
// [MEM]  NVIDIA, "GPU Memory Error Management" (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/):
//        row remapping "requires a GPU reset to take effect"; the row-remapping failure flag is
//        the RMA criterion ("RMA Policy Thresholds for Row-Remapping"); page retirement on
//        pre-Ampere GPUs "supported a maximum of 64 retirements"; the recovery action flag asks
//        for None / Reset / Reboot / Drain P2P / Drain and Reset ("Error Recovery and Response
//        Flags").
// [DPR]  NVIDIA, "Dynamic Page Retirement" (docs.nvidia.com/deploy/dynamic-page-retirement/): a
//        retired page is excluded only after the driver reloads or the GPU resets, and
//        "Pending Page Blacklist: Yes" until then.
// [DCGM] NVIDIA/DCGM: DcgmGpuHardwareLimits.h, DCGM_LIMIT_MAX_RETIRED_PAGES 63 ("updated to
//        match the field diag"); nvvs/plugin_src/software/Software.cpp fails on pending page
//        retirements and on SBE+DBE retired pages >= that limit; the health watch
//        (DcgmHealthWatch.cpp) fails on any volatile DBE and on the row-remap failure flag.
// [AZ]   Azure/azurehpc-health-checks customTests/azure_gpu_ecc.nhc: fails on remapped_rows
//        pending, remapped_rows failure and any SRAM uncorrectable count;
//        azure_gpu_clock_throttling.nhc: gpu_idle and sw_power_cap are not reported.
// [GPUD] leptonai/gpud pkg/nvidia-query/nvml/clock_events.go: HW slowdown, HW thermal and HW
//        power brake are the "hardware slowdown" reasons; remapped_rows.go: pending -> reset,
//        failure -> RMA.
// [SI]   scitix/sichek components/nvidia/collector/clock_events.go: HW thermal and HW power brake
//        are critical, SW thermal and SW power cap a warning; checker/check_pcie.go: a width below
//        the maximum is abnormal, a generation below it only when the GPU is not idle.
// [NVML] NVML nvmlClocksEventReasons: HW slowdown "reducing the core clocks by a factor of 2 or
//        more" (temperature, power brake, power draw); SW thermal keeps temperatures "within
//        operating limits".

namespace cmax::health {

namespace {

using audit::Outcome;
using gputools::ClockEvent;
using gputools::SmiFieldState;
using gputools::SmiGpu;

constexpr std::string_view kTitle =
    "nvidia-smi GPU health (ECC, row remapping, page retirement, clock events, PCIe link)";

// Product-name tokens of data-center GPUs, where ECC is expected on. Whole tokens, so that
// "RTX A1000" is not taken for an A10.
constexpr std::string_view kDataCenterTokens[] = {
    "Tesla", "K80", "P40",  "P100", "V100", "T4",   "A2",    "A10",  "A10G",  "A16",
    "A30",   "A40", "A100", "A800", "H20",  "H100", "H200",  "H800", "GH200", "L4",
    "L20",   "L40", "L40S", "B100", "B200", "B300", "GB200", "GB300"};

// The clock event reasons that are faults and how bad each is ([GPUD], [SI], [NVML]). SW thermal
// is the driver keeping within temperature limits (cooling to fix, not a broken GPU): a warning,
// as in [SI]. gpu_idle, sw_power_cap, applications/display clocks and sync boost are normal.
struct ClockRule {
  ClockEvent event;
  Outcome outcome;
  std::string_view what;
};
constexpr ClockRule kClockRules[] = {
    {ClockEvent::hw_slowdown, Outcome::fail, "HW slowdown"},
    {ClockEvent::hw_thermal_slowdown, Outcome::fail, "HW thermal slowdown"},
    {ClockEvent::hw_power_brake_slowdown, Outcome::fail, "HW power brake slowdown"},
    {ClockEvent::sw_thermal_slowdown, Outcome::warn, "SW thermal slowdown"},
};

struct Problem {
  Outcome outcome;
  std::string text;
};

int rank(Outcome o) { return o == Outcome::fail ? 2 : o == Outcome::warn ? 1 : 0; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// Idle GPUs drop to a lower P-state and PCIe generation ([SI]: "PCIe link generation may not be
// its maximum when pstate is not P0"); nvidia-smi marks it with gpu_idle or 0 % utilisation.
bool is_idle(const SmiGpu& g) {
  return g.clock_event(ClockEvent::gpu_idle).value_or(false) || g.utilization_gpu_percent == 0u ||
         (!g.pstate.empty() && g.pstate != "P0");
}

void memory_rules(const SmiGpu& g, const SmiJudgeOptions& o, std::vector<Problem>& out) {
  if (g.remap_failure == true)
    out.push_back(
        {Outcome::fail,
         "row remapping failed (remapped_rows.failure = Yes): the memory cannot be repaired "
         "any further; drain the node, confirm with the field diagnostic and RMA the GPU"});
  if (g.remap_pending == true)
    out.push_back(
        {Outcome::fail,
         "a row remap is pending: drain the GPU and reset it (`nvidia-smi -r`) or reboot to "
         "apply it"});
  if (g.retired_pending == true)
    out.push_back({Outcome::fail,
                   "a page retirement is pending: the bad page stays in use until the GPU resets; "
                   "drain the GPU and reset it or reload the driver"});
  if (g.retired_sbe_pages || g.retired_dbe_pages) {
    const std::uint64_t sbe = g.retired_sbe_pages.value_or(0),
                        dbe = g.retired_dbe_pages.value_or(0);
    if (sbe + dbe >= o.retired_pages_limit)
      out.push_back(
          {Outcome::fail,
           fmt::format("{} retired pages ({} single-bit, {} double-bit) reach the limit of {}: "
                       "the retirement table is nearly full; drain the node and RMA the GPU",
                       sbe + dbe, sbe, dbe, o.retired_pages_limit)});
  }
  if (g.ecc_volatile_uncorrected.value_or(0) > 0)
    out.push_back(
        {Outcome::fail,
         fmt::format("{} uncorrected ECC errors since the driver loaded: drain the GPU, reset "
                     "it and run `dcgmi diag -r 3`; RMA it if they recur",
                     *g.ecc_volatile_uncorrected)});
  else if (g.ecc_aggregate_uncorrected.value_or(0) > 0 && g.remap_pending != true &&
           g.retired_pending != true)
    out.push_back(
        {Outcome::warn,
         fmt::format("{} uncorrected ECC errors over the GPU's life, none since the driver "
                     "loaded and nothing pending: historic; watch for new ones",
                     *g.ecc_aggregate_uncorrected)});
}

void clock_rules(const SmiGpu& g, std::vector<Problem>& out) {
  for (auto outcome : {Outcome::fail, Outcome::warn}) {
    std::vector<std::string_view> active;
    for (const auto& r : kClockRules)
      if (r.outcome == outcome && g.clock_event(r.event).value_or(false)) active.push_back(r.what);
    if (active.empty()) continue;
    const std::string names = fmt::format("{}", fmt::join(active, ", "));
    out.push_back(
        {outcome,
         outcome == Outcome::fail
             ? fmt::format(
                   "clocks held down by {} (at least halves the clocks): check cooling, the "
                   "power supply and `nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER`; "
                   "drain the GPU if it persists",
                   names)
             : fmt::format("clocks lowered by {} to stay within temperature limits: check the "
                           "GPU's cooling and airflow",
                           names)});
  }
}

void link_rules(const SmiGpu& g, const SmiJudgeOptions& o, std::vector<Problem>& out) {
  if (g.pcie_width && g.pcie_width_max && *g.pcie_width < *g.pcie_width_max)
    out.push_back(
        {Outcome::fail,
         fmt::format("the PCIe link runs at x{} of x{}: reseat the GPU or its riser and check "
                     "the slot; drain the GPU until then",
                     *g.pcie_width, *g.pcie_width_max)});
  if (g.pcie_gen && g.pcie_gen_max && *g.pcie_gen < *g.pcie_gen_max &&
      (o.pcie_gen_when_idle || !is_idle(g)))
    out.push_back(
        {Outcome::warn,
         fmt::format("the PCIe link runs at Gen{} of Gen{} while the GPU is busy: check the "
                     "slot, riser and BIOS link settings",
                     *g.pcie_gen, *g.pcie_gen_max)});
}

void driver_rules(const SmiGpu& g, const SmiJudgeOptions& o, std::vector<Problem>& out) {
  const std::string action = lower(g.recovery_action);
  if (!action.empty() && action != "none") {
    std::string_view todo = "drain the GPU and follow the action";
    if (action.find("drain") != std::string::npos && action.find("reset") != std::string::npos)
      todo = "drain the GPU, then reset it (`nvidia-smi -r`)";
    else if (action.find("drain") != std::string::npos)
      todo = "stop the GPU's peer-to-peer work and read the action again";
    else if (action.find("reset") != std::string::npos)
      todo = "stop its processes and reset the GPU (`nvidia-smi -r`)";
    else if (action.find("reboot") != std::string::npos)
      todo = "drain the node and reboot it";
    out.push_back({Outcome::fail, fmt::format("the driver asks for a recovery action ({}): {}",
                                              g.recovery_action, todo)});
  }
  if (g.fabric_state == "Completed" && !g.fabric_status.empty() && g.fabric_status != "Success")
    out.push_back({Outcome::fail,
                   fmt::format("NVLink fabric registration failed ({}): check `systemctl status "
                               "nvidia-fabricmanager` and reset the GPU",
                               g.fabric_status)});
  else if (g.fabric_state == "Not Started" || g.fabric_state == "In Progress")
    out.push_back({Outcome::warn,
                   fmt::format("NVLink fabric registration is {}: CUDA cannot use the GPU until it "
                               "completes; check nvidia-fabricmanager",
                               lower(g.fabric_state))});
  const bool dc = o.data_center.value_or(is_data_center_gpu(g.product_name, g.product_brand));
  if (dc && g.ecc_enabled == false)
    out.push_back(
        {Outcome::warn,
         g.ecc_pending == true
             ? "ECC is off with enabling pending: reset the GPU to turn it on"
             : "ECC is off on a data-center GPU: memory errors go undetected; enable it with "
               "`nvidia-smi -e 1` and reset the GPU"});
  else if (dc && g.ecc_enabled == true && g.ecc_pending == false)
    out.push_back({Outcome::warn,
                   "ECC will turn off at the next reset (pending mode Disabled): re-enable it with "
                   "`nvidia-smi -e 1`"});
  if (g.temperature_c && g.temperature_slowdown_c && *g.temperature_c >= *g.temperature_slowdown_c)
    out.push_back(
        {Outcome::warn,
         fmt::format("{:.0f} C is at or above the slowdown threshold {:.0f} C: check cooling",
                     *g.temperature_c, *g.temperature_slowdown_c)});
}

// Whether nvidia-smi gave at least one reading a fault would show in.
bool has_fault_reading(const SmiGpu& g) {
  const bool clocks = std::any_of(g.clock_events.begin(), g.clock_events.end(),
                                  [](auto& e) { return e.has_value(); });
  return g.ecc_volatile_uncorrected || g.ecc_aggregate_uncorrected || g.retired_sbe_pages ||
         g.retired_dbe_pages || g.retired_pending || g.remap_pending || g.remap_failure || clocks ||
         (g.pcie_width && g.pcie_width_max) || !g.recovery_action.empty();
}

std::string summary(const SmiGpu& g, const std::string& target) {
  std::string s = fmt::format("{} {} {}:", target, g.bus_id.empty() ? "(no bus id)" : g.bus_id,
                              g.product_name.empty() ? "unknown GPU" : g.product_name);
  auto num = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string("?"); };
  if (g.ecc_volatile_uncorrected || g.ecc_aggregate_uncorrected)
    s += fmt::format(" ECC uncorrected {} volatile/{} aggregate,", num(g.ecc_volatile_uncorrected),
                     num(g.ecc_aggregate_uncorrected));
  if (g.remap_pending || g.remap_failure)
    s += fmt::format(" remap pending {} failed {},", g.remap_pending == true ? "yes" : "no",
                     g.remap_failure == true ? "yes" : "no");
  if (g.retired_sbe_pages || g.retired_dbe_pages)
    s += fmt::format(" retired pages {}+{},", num(g.retired_sbe_pages), num(g.retired_dbe_pages));
  if (g.pcie_gen || g.pcie_width)
    s += fmt::format(" PCIe Gen{}/{} x{}/{},", num(g.pcie_gen), num(g.pcie_gen_max),
                     num(g.pcie_width), num(g.pcie_width_max));
  if (g.temperature_c) s += fmt::format(" {:.0f} C,", *g.temperature_c);
  std::vector<std::string_view> active;
  for (const auto& e : gputools::kClockEvents)
    if (g.clock_event(e.event).value_or(false)) active.push_back(e.name);
  if (!active.empty()) s += fmt::format(" clocks: {},", fmt::join(active, "+"));
  if (s.back() == ',') s.pop_back();
  return s;
}

void measure(const SmiGpu& g, const SmiJudgeOptions& o, CheckResult& r) {
  auto add = [&](std::string name, const auto& v, std::string unit,
                 std::optional<double> max = std::nullopt) {
    if (v)
      r.measurements.push_back(
          {std::move(name), static_cast<double>(*v), std::move(unit), std::nullopt, max});
  };
  add("temperature_c", g.temperature_c, "C", g.temperature_slowdown_c);
  add("ecc_uncorrected_volatile", g.ecc_volatile_uncorrected, "errors", 0.0);
  add("ecc_uncorrected_aggregate", g.ecc_aggregate_uncorrected, "errors");
  add("ecc_corrected_volatile", g.ecc_volatile_corrected, "errors");
  if (g.retired_sbe_pages || g.retired_dbe_pages)
    r.measurements.push_back(
        {"retired_pages",
         static_cast<double>(g.retired_sbe_pages.value_or(0) + g.retired_dbe_pages.value_or(0)),
         "pages", std::nullopt, static_cast<double>(o.retired_pages_limit - 1)});
  add("remapped_rows_uncorrectable", g.remapped_uncorrectable, "rows");
  add("pcie_replay_counter", g.pcie_replay_counter, "replays");
  add("power_w", g.power_draw_w, "W", g.power_limit_w);
}

CheckResult judge_gpu_smi(const SmiGpu& g, std::string target, const SmiJudgeOptions& o) {
  CheckResult r;
  r.id = std::string(kSmiCheckId);
  r.category = audit::Category::reliability;
  r.title = std::string(kTitle);
  r.target = std::move(target);
  r.summary = summary(g, r.target);
  measure(g, o, r);

  std::vector<Problem> problems;
  // A reading the driver could not return is itself a fault sign ([DCGM] treats a GPU it cannot
  // read as failed); nvidia-smi prints "Unknown Error" / "ERR!" for it.
  std::vector<std::string> unreadable;
  for (const auto& i : g.issues)
    if (i.state == SmiFieldState::unreadable)
      unreadable.push_back(fmt::format("{} ({})", i.field, i.raw));
  if (!unreadable.empty())
    problems.push_back(
        {Outcome::fail,
         fmt::format("nvidia-smi could not read {}: the GPU may be falling off the bus; "
                     "check `dmesg` for Xid 79, drain the node and reset the GPU or "
                     "reboot",
                     fmt::join(unreadable, ", "))});
  memory_rules(g, o, problems);
  clock_rules(g, problems);
  link_rules(g, o, problems);
  driver_rules(g, o, problems);

  std::stable_sort(problems.begin(), problems.end(), [](const Problem& a, const Problem& b) {
    return rank(a.outcome) > rank(b.outcome);
  });
  if (!problems.empty()) {
    r.outcome = problems.front().outcome;
    for (const auto& p : problems) r.reason += (r.reason.empty() ? "" : "; ") + p.text;
  } else if (!has_fault_reading(g)) {
    r.outcome = Outcome::unverified;
    r.reason =
        "nvidia-smi gave none of the fault readings for this GPU (ECC counts, row remapping, "
        "retired pages, "
        "clock event reasons, PCIe link width): query them (`nvidia-smi -q -x`) to judge it";
  } else {
    r.outcome = Outcome::pass;
  }
  return r;
}

}  // namespace

bool is_data_center_gpu(std::string_view product_name, std::string_view product_brand) {
  if (product_brand == "Tesla") return true;
  std::string_view rest = product_name;
  while (!rest.empty()) {
    const std::size_t cut = rest.find_first_of(" -");
    const std::string_view token = rest.substr(0, cut);
    for (auto t : kDataCenterTokens)
      if (token == t) return true;
    rest = cut == std::string_view::npos ? std::string_view{} : rest.substr(cut + 1);
  }
  return false;
}

std::vector<CheckResult> judge_smi(const gputools::SmiReport& report,
                                   const SmiJudgeOptions& options) {
  std::vector<CheckResult> out;
  if (report.gpus.empty()) {
    CheckResult r;
    r.id = std::string(kSmiCheckId);
    r.title = std::string(kTitle);
    r.outcome = Outcome::unverified;
    r.reason =
        report.attached_gpus.value_or(0) > 0
            ? fmt::format(
                  "nvidia-smi says {} GPUs are attached but printed none: rerun it and check that "
                  "the output is complete",
                  *report.attached_gpus)
            : "nvidia-smi listed no GPUs: check `nvidia-smi -L` and the driver";
    r.summary = r.reason;
    out.push_back(std::move(r));
    return out;
  }
  // Bus order, so gpu<N> names the same GPU whatever order the output listed them in; GPUs
  // without a bus id keep their output order after the others.
  std::vector<std::size_t> order(report.gpus.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = report.gpus[a].bus_id;
    const auto& y = report.gpus[b].bus_id;
    if (x.empty() != y.empty()) return y.empty();
    return x < y;
  });
  for (std::size_t n = 0; n < order.size(); ++n)
    out.push_back(judge_gpu_smi(report.gpus[order[n]], fmt::format("gpu{}", n), options));
  return out;
}

}  // namespace cmax::health
