#include "drill/run_target.h"

#include <algorithm>
#include <optional>
#include <stop_token>
#include <thread>

#include <fmt/format.h>

#include "drill/record.h"
#include "drill/watch.h"

namespace cmax::drill {
namespace {

using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

std::optional<std::string> optional(const std::string& v) {
  return v.empty() ? std::nullopt : std::optional<std::string>(v);
}

WatchOptions watch_options(const DrillContext& c, const std::string& node) {
  const RunOptions& f = c.plan.options;
  WatchOptions wo;
  wo.node = node;
  wo.reservation = optional(f.reservation);
  wo.partition = optional(f.partition);
  wo.job = optional(f.job);
  wo.workload = optional(f.workload);
  wo.poll = std::chrono::milliseconds(f.poll_ms);
  wo.timeouts = c.timeouts;
  wo.wait_return = f.wait_return;
  wo.shared_watch = c.plan.nodes.size() > 1;
  wo.reboot_flow = f.reboot || f.await_reboot;
  return wo;
}

// The target as it is before the injection; an error when what is watched cannot be seen from it.
Result<Observation> read_baseline(Poller& poller, const WatchOptions& wo, SteadyClock::time_point t0) {
  auto baseline = poller.observe(wo, t0);
  if (baseline && wo.workload && !baseline->workload)
    return fail("read the pods of {}: the API server did not answer a PodList", *wo.workload);
  if (baseline && baseline->workload && baseline->workload->on_target == 0)
    return fail("no Running pod of {} is on {}: its rescheduling could not be seen; drill a node it runs on",
                *wo.workload, wo.node);
  return baseline;
}

// What the drill did to the kernel's rate limit, then each line it wrote: to the audit record and
// the target's entry.
void record_injection(DrillContext& c, const std::string& node, const std::string& devkmsg_note,
                      const std::vector<Injected>& injected, json& node_json) {
  const std::string& id = c.plan.options.drill_id;
  std::lock_guard lock(c.audit_mu);
  if (!devkmsg_note.empty()) {
    c.audit_log << json{{"drill_id", id}, {"node", node}, {"sysctl", "kernel.printk_devkmsg"}, {"did", devkmsg_note}}.dump()
                << "\n";
    node_json["devkmsg"] = devkmsg_note;
  }
  for (const auto& l : injected) {
    json a{{"drill_id", id}, {"node", node}, {"t_unix", l.t_unix}, {"level", l.level}, {"text", l.text}};
    c.audit_log << a.dump() << "\n";
    node_json["injected"].push_back({{"t_us", l.t_us}, {"t_unix", l.t_unix}, {"level", l.level}, {"text", l.text}});
  }
  c.audit_log.flush();
}

// The remediation the scenario asks for, as a provider's automation would request it: once the
// node is drained, a reboot that returns it. Recorded in the audit record.
void reboot_when_drained(DrillContext& c, const std::string& node, SteadyClock::time_point t0, json& node_json) {
  json r = c.site.request_reboot(c.plan.options, node, t0, c.timeouts.drained);
  std::lock_guard lock(c.audit_mu);
  c.audit_log << json{{"drill_id", c.plan.options.drill_id}, {"node", node}, {"t_unix", r.value("t_unix", 0.0)},
                      {"action", "reboot"}, {"command", r.value("command", "")}, {"result", r.value("result", "")}}
                     .dump()
              << "\n";
  c.audit_log.flush();
  node_json["reboot"] = std::move(r);
}

// Each stage into the target's entry; the exit code its verdicts give.
int record_stages(const std::vector<StageResult>& stages, const WatchOptions& wo, json& node_json) {
  int exit_code = kDrillOk;
  double worst_uncertainty = 0;
  for (const auto& st : stages) {
    const bool awaited = wo.awaits(st.stage);
    json sj{{"stage", st.name},     {"reached", st.reached}, {"at_ms", st.at_ms}, {"lower_ms", st.lower_ms},
            {"uncertainty_ms", st.uncertainty_ms}, {"verdict", verdict_name(st.verdict)},
            {"threshold_ms", st.threshold_ms ? json(*st.threshold_ms) : json(nullptr)}, {"awaited", awaited},
            {"how", st.how}};
    node_json["stages"].push_back(sj);
    if (st.reached) worst_uncertainty = std::max(worst_uncertainty, st.uncertainty_ms);
    if (awaited && st.verdict != Verdict::kOk && exit_code == kDrillOk) exit_code = kDrillStageFailed;
  }
  node_json["max_uncertainty_ms"] = worst_uncertainty;
  return exit_code;
}

// The first awaited stage after detection that never came (and was not skipped); "" none.
std::string first_stuck(const std::vector<StageResult>& stages, const WatchOptions& wo) {
  for (const auto& st : stages)
    if (st.stage != Stage::kDetected && wo.awaits(st.stage) && !st.reached && st.verdict != Verdict::kSkipped)
      return st.name;
  return {};
}

// After the watch: stages, verdicts, the detector, and on Slurm why a stage never came.
int record_watch(DrillContext& c, std::size_t i, const Observation& baseline, const std::vector<Observation>& seen,
                 int failed_polls, const WatchOptions& wo, json& node_json) {
  const RunOptions& f = c.plan.options;
  auto stages = compute_stages(baseline, seen, c.thresholds, c.timeouts, wo.shared_watch, wo.reboot_flow);
  if (!stages) {
    node_json["error"] = stages.error().message;
    return kDrillEnvError;
  }
  const int exit_code = record_stages(*stages, wo, node_json);
  node_json["polls"] = seen.size();
  node_json["failed_polls"] = failed_polls;
  node_json["after"] = seen.empty() ? json(nullptr) : state_json(seen.back().target);
  node_json["detector"] = detector_of(seen, c.before[i], f.provider_runs_cmax);
  if (!f.kubernetes())
    if (auto stuck = first_stuck(*stages, wo); !stuck.empty())
      node_json["stuck"] = c.site.stuck_report({stuck, seen.empty() ? c.before[i] : seen.back().target, c.plan.local[i],
                                                c.reservations, f.reservation, c.spares_before});
  return exit_code;
}

}  // namespace

TargetOutcome run_target(DrillContext& c, std::size_t i) {
  const RunOptions& f = c.plan.options;
  const std::string& node = c.plan.nodes[i];
  const bool local = c.plan.local[i];
  const WatchOptions wo = watch_options(c, node);
  auto poller_ptr = c.site.poller().another();
  Poller& poller = *poller_ptr;
  auto t0 = SteadyClock::now();
  auto baseline = read_baseline(poller, wo, t0);
  if (!baseline) {
    c.progress.warn(fmt::format("{}: {}; nothing was injected there", node, baseline.error().message));
    return {json{{"node", node}, {"error", baseline.error().message}}, kDrillEnvError};
  }
  // The injection's own time is t = 0 for every stage. The watch starts with it, so polls during
  // the injection bound a fast detector's reaction from below. One target injects at a time.
  std::unique_lock inject_lock(c.inject_mu);
  t0 = SteadyClock::now();
  baseline->t_start = baseline->t_end = std::chrono::microseconds(0);
  int failed_polls = 0;
  std::vector<Observation> seen;
  std::stop_source stop_watch;
  std::jthread watcher([&] { seen = watch(poller, wo, *baseline, t0, stop_watch.get_token(), failed_polls); });
  const std::string node_reservation = reservation_of(c.reservations, node);
  std::string devkmsg_note;
  auto injected = c.site.inject({f, node, c.plan.steps, t0, local, node_reservation}, devkmsg_note);
  inject_lock.unlock();
  json node_json{{"node", node}, {"inject", local ? "local" : "srun"}, {"before", state_json(c.before[i])}};
  if (!node_reservation.empty()) node_json["reservation"] = node_reservation;
  if (!injected) {
    stop_watch.request_stop();
    watcher.join();
    node_json["error"] = injected.error().message;
    return {node_json, kDrillEnvError};
  }
  record_injection(c, node, devkmsg_note, *injected, node_json);
  node_json["injected_at_ms"] = std::chrono::duration<double, std::milli>(t0 - c.drill_start).count();
  if (f.reboot) reboot_when_drained(c, node, t0, node_json);
  watcher.join();
  const int exit_code = record_watch(c, i, *baseline, seen, failed_polls, wo, node_json);
  if (exit_code == kDrillEnvError) return {node_json, exit_code};
  // A drill on this machine ends its lines at once; one through srun ends them at cleanup (the
  // node is drained now, so no srun reaches it).
  if (local) node_json["end_marker"] = c.site.end_marker(f, node, true, node_reservation);
  return {node_json, exit_code};
}

}  // namespace cmax::drill
