#include "drill/run.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/text_file.h"
#include "drill/marker.h"
#include "drill/record.h"
#include "drill/reservation_restore.h"
#include "drill/run_check.h"
#include "drill/run_target.h"
#include "signals/drill_marker.h"

namespace cmax::drill {
namespace {

using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

std::string new_drill_id() {
  std::random_device rd;
  return fmt::format("{:04x}", rd() & 0xffff);
}

// The drill is over, for detectors reading the marker, once every awaited stage has timed out.
double until_unix(const RunOptions& f, const core::Clock& clock) {
  long long total = static_cast<long long>(f.detect_timeout_s) + f.drain_timeout_s;
  if (!f.reservation.empty() || !f.partition.empty() || !f.job.empty()) total += f.replace_timeout_s;
  if (f.wait_return) total += f.return_timeout_s;
  const double now = std::chrono::duration<double>(clock.now().time_since_epoch()).count();
  return now + static_cast<double>(total) + 60;
}

// What a drill records and shows before its targets' entries.
json report_header(const Plan& plan, const std::vector<sched::Reservation>& reservations) {
  const RunOptions& f = plan.options;
  json held_before = json::array();
  for (const auto& r : reservations)
    if (r.state == "ACTIVE" &&
        std::any_of(plan.nodes.begin(), plan.nodes.end(), [&](const std::string& n) { return r.contains(n); }))
      held_before.push_back(reservation_to_json(r));
  return {{"schema", "cmax.drill/1"},
          {"drill_id", f.drill_id},
          {"scenario", plan.scenario.id},
          {"title", plan.scenario.title},
          {"expect", signals::to_string(plan.scenario.expect)},
          {"poll_ms", f.poll_ms},
          {"scheduler", f.scheduler},
          {"reservation", f.reservation.empty() ? json(nullptr) : json(f.reservation)},
          {"partition", f.partition.empty() ? json(nullptr) : json(f.partition)},
          {"job", f.job.empty() ? json(nullptr) : json(f.job)},
          {"reservations_before", held_before},
          {"provider_runs_cmax", f.provider_runs_cmax},
          {"nodes", json::array()}};
}

// Before anything is injected: the record cleanup needs (the targets and their state before), so
// that a drill killed mid-way can still be reverted (cmax drill cleanup --run DIR). Replaced by
// the full report at the end ("complete": true).
Result<void> write_pending(const std::string& dir, const Plan& plan, const json& report,
                           const std::vector<sched::NodeState>& before) {
  json pending = report;
  pending["complete"] = false;
  for (std::size_t i = 0; i < plan.nodes.size(); ++i)
    pending["nodes"].push_back(
        {{"node", plan.nodes[i]}, {"inject", plan.local[i] ? "local" : "srun"}, {"before", state_json(before[i])}});
  if (auto w = core::write_text_file_atomic((std::filesystem::path(dir) / "drill.json").string(), pending.dump(2) + "\n");
      !w)
    return fail("{}; nothing was injected", w.error().message);
  return ok();
}

// The spares a REPLACE_DOWN reservation could swap in, before the drill (targets excluded).
std::vector<std::string> spares_before(const Plan& plan, Site& site) {
  std::vector<std::string> out;
  if (plan.options.kubernetes() || plan.options.reservation.empty()) return out;
  if (auto idle = site.idle_outside_reservations())
    for (auto& n : *idle)
      if (std::find(plan.nodes.begin(), plan.nodes.end(), n) == plan.nodes.end()) out.push_back(std::move(n));
  return out;
}

std::size_t width(const Plan& plan) {
  return std::min<std::size_t>(plan.nodes.size(), static_cast<std::size_t>(std::max(plan.options.parallel, 1)));
}

// Targets run side by side, at most --parallel at once, each on its own clock and pollers.
std::vector<TargetOutcome> run_targets(DrillContext& c) {
  std::vector<TargetOutcome> outcomes(c.plan.nodes.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < c.plan.nodes.size(); i = next++) outcomes[i] = run_target(c, i);
  };
  std::vector<std::jthread> workers;
  for (std::size_t w = 1; w < width(c.plan); ++w) workers.emplace_back(worker);
  worker();
  return outcomes;
}

// The targets' entries into the report, the fleet's numbers, and the drill's exit code.
int fold_outcomes(std::vector<TargetOutcome> outcomes, const Plan& plan, const std::vector<std::string>& spares,
                  json& report) {
  int exit_code = kDrillOk;
  for (auto& o : outcomes) {
    report["nodes"].push_back(std::move(o.node_json));
    if (o.exit_code == kDrillEnvError) exit_code = kDrillEnvError;
    else if (o.exit_code != kDrillOk && exit_code == kDrillOk) exit_code = o.exit_code;
  }
  report["parallel"] = width(plan);
  if (plan.nodes.size() > 1) report["fleet"] = fleet_summary(report["nodes"], spares);
  report["exit_code"] = exit_code;
  report["complete"] = true;
  return exit_code;
}

Result<DrillRecord> execute(const Plan& plan, Site& site, Progress& progress) {
  auto checked = check_before_injecting(plan, site);
  if (!checked) return Unexpected<Error>{checked.error()};
  const std::string& dir = plan.options.out;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail("create {}: {}", dir, ec.message());
  std::ofstream audit_log(std::filesystem::path(dir) / "injected.jsonl", std::ios::app);
  if (!audit_log) return fail("open {}/injected.jsonl: cannot write the audit record", dir);
  const auto spares = spares_before(plan, site);
  DrillRecord record{true, dir, report_header(plan, checked->reservations), kDrillOk};
  if (auto w = write_pending(dir, plan, record.report, checked->before); !w) return Unexpected<Error>{w.error()};
  const RunOptions& f = plan.options;
  StageThresholds thresholds;
  thresholds.detected = std::chrono::seconds(f.detect_threshold_s);
  thresholds.drained = std::chrono::seconds(f.drain_threshold_s);
  thresholds.replaced = std::chrono::seconds(f.replace_threshold_s);
  const StageTimeouts timeouts{std::chrono::seconds(f.detect_timeout_s), std::chrono::seconds(f.drain_timeout_s),
                               std::chrono::seconds(f.replace_timeout_s), std::chrono::seconds(f.return_timeout_s)};
  DrillContext c{plan,       site,      progress,  checked->before, checked->reservations, spares,
                 thresholds, timeouts, audit_log, SteadyClock::now()};
  record.exit_code = fold_outcomes(run_targets(c), plan, spares, record.report);
  if (auto w = core::write_text_file_atomic((std::filesystem::path(dir) / "drill.json").string(),
                                            record.report.dump(2) + "\n");
      !w)
    return Unexpected<Error>{w.error()};
  return record;
}

}  // namespace

Result<DrillRecord> run_drill(const RunOptions& options, Site& site, const core::Clock& clock, Progress& progress) {
  RunOptions f = options;
  if (f.drill_id.empty()) f.drill_id = new_drill_id();
  auto plan = check_request(f, site);
  if (!plan) return Unexpected<Error>{plan.error()};
  if (auto c = site.connect(); !c) return Unexpected<Error>{c.error()};
  plan->options.until_unix = until_unix(plan->options, clock);
  // The plan, always; without --yes it is all that happens.
  progress.plan(*plan);
  if (!f.yes) return DrillRecord{};
  return execute(*plan, site, progress);
}

}  // namespace cmax::drill
