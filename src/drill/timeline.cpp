#include "drill/timeline.h"

#include <algorithm>
#include <array>
#include <functional>

namespace cmax::drill {
namespace {

using std::chrono::microseconds;

// What one poll says about one stage. Unknown: the poll could not tell (no reservation answer),
// so it neither places the event nor narrows its lower bound.
enum class Seen { kNo, kYes, kUnknown };

constexpr std::array<std::string_view, 7> kStageNames = {"detected", "drained",          "replaced", "returned",
                                                         "reboot_requested", "down", "rebooted"};
constexpr std::array<std::string_view, 5> kVerdictNames = {"ok", "slow", "never", "pending",
                                                           "skipped"};

// Flags under which a node in an otherwise working base state still takes no new jobs.
constexpr std::array<std::string_view, 10> kOutOfServiceFlags = {
    "DRAIN",        "FAIL",          "NOT_RESPONDING", "REBOOT_REQUESTED", "REBOOT_ISSUED",
    "POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN",     "POWERING_UP",      "INVALID_REG"};

double to_ms(microseconds us) { return static_cast<double>(us.count()) / 1000.0; }

Seen seen(bool yes) { return yes ? Seen::kYes : Seen::kNo; }

bool in_service(const sched::NodeState& n) {
  if (n.base != "IDLE" && n.base != "MIXED" && n.base != "ALLOCATED") return false;
  return std::none_of(kOutOfServiceFlags.begin(), kOutOfServiceFlags.end(),
                      [&](std::string_view f) { return n.has_flag(f); });
}

bool detected(const sched::NodeState& base, const sched::NodeState& now) {
  return (now.drain_flag() && !base.drain_flag()) || (now.down() && !base.down()) ||
         (!now.reason.empty() && now.reason != base.reason);
}

// What one poll says about the replacement, from every source watched; `how` says what it saw.
Seen replaced(const Observation& base, const Observation& now, bool shared, std::string& how) {
  const auto& target = base.target.name;
  bool any_known = false;
  if (base.reservation && now.reservation) {
    any_known = true;
    const auto& before = *base.reservation;
    // Several targets of one reservation: a node that joined may have replaced any of them; only
    // this target leaving says it was replaced.
    for (const auto& n : now.reservation->nodes)
      if (!shared && n != target && !before.contains(n)) {
        how = n + " joined reservation " + before.name;
        return Seen::kYes;
      }
    if (before.contains(target) && !now.reservation->contains(target)) {
      how = target + " left reservation " + before.name;
      return Seen::kYes;
    }
  }
  if (base.partition && now.partition) {
    any_known = true;
    for (const auto& n : now.partition->nodes)
      if (n != target && !base.partition->contains(n)) {
        how = n + " joined partition " + base.partition->name;
        return Seen::kYes;
      }
  }
  if (base.job && now.job) {
    any_known = true;
    const auto& j = *now.job;
    if (j.running() && !j.nodes.empty() && !j.contains(target) &&
        (j.restarts > base.job->restarts || j.nodes != base.job->nodes)) {
      std::string on;
      for (const auto& n : j.nodes) on += (on.empty() ? "" : ",") + n;
      how = j.restarts > base.job->restarts
                ? "job " + j.id + " requeued (restart " + std::to_string(j.restarts) + ") onto " + on
                : "job " + j.id + " moved onto " + on;
      return Seen::kYes;
    }
  }
  if (base.workload && now.workload) {
    any_known = true;
    const auto& b = *base.workload;
    const auto& w = *now.workload;
    if (w.elsewhere >= b.elsewhere + b.on_target && w.on_target == 0) {
      std::string on;
      for (const auto& n : w.elsewhere_nodes) on += (on.empty() ? "" : ",") + n;
      how = std::to_string(w.elsewhere) + " pods of " + w.selector + " running on " + on;
      return Seen::kYes;
    }
  }
  return any_known ? Seen::kNo : Seen::kUnknown;
}

Result<void> validate(const Observation& baseline, const std::vector<Observation>& observations) {
  const auto& t = baseline.target;
  if (t.drain_flag() || t.down())
    return fail(
        "drill target {} is already {} before the drill (reason: \"{}\"), so no reaction could be "
        "seen: resume it (scontrol update NodeName={} State=RESUME) or drill another node",
        t.name, t.state, t.reason, t.name);
  if (baseline.job && (!baseline.job->running() || !baseline.job->contains(t.name)))
    return fail(
        "job {} is {}{} before the drill, not running on {}: its requeue could not be seen; "
        "start a job on the target first",
        baseline.job->id, baseline.job->state,
        baseline.job->nodes.empty() ? std::string() : " on " + baseline.job->nodes.front(), t.name);
  if (baseline.workload && baseline.workload->on_target == 0)
    return fail("no Running pod of {} is on {} before the drill: its rescheduling could not be seen; drill a node the "
                "workload runs on",
                baseline.workload->selector, t.name);
  for (std::size_t k = 0; k < observations.size(); ++k) {
    const auto& o = observations[k];
    if (o.target.name != t.name)
      return fail("observation {} is of node \"{}\", not the drill target \"{}\"", k, o.target.name,
                  t.name);
    if (o.t_start < microseconds(0))
      return fail("observation {} starts {} us before the injection", k, -o.t_start.count());
    if (o.t_end < o.t_start)
      return fail("observation {} ends ({} us) before it starts ({} us)", k, o.t_end.count(),
                  o.t_start.count());
    if (k > 0 && o.t_start < observations[k - 1].t_start)
      return fail("observation {} starts ({} us) before observation {} ({} us)", k,
                  o.t_start.count(), k - 1, observations[k - 1].t_start.count());
  }
  return ok();
}

StageResult time_stage(Stage stage, const std::vector<Observation>& observations,
                       const std::function<Seen(std::size_t)>& predicate,
                       std::optional<std::chrono::milliseconds> threshold,
                       std::chrono::milliseconds timeout) {
  StageResult r;
  r.stage = stage;
  r.name = std::string(stage_name(stage));
  if (threshold) r.threshold_ms = static_cast<double>(threshold->count());
  microseconds lower{0};
  microseconds last_known{-1};  // t_start of the last poll that could tell; -1: none could
  for (std::size_t k = 0; k < observations.size(); ++k) {
    auto s = predicate(k);
    if (s == Seen::kUnknown) continue;
    last_known = observations[k].t_start;
    if (s == Seen::kNo) {
      lower = observations[k].t_start;
      continue;
    }
    const auto at = observations[k].t_end;
    if (at > timeout) {  // first seen too late: as good as never
      r.verdict = Verdict::kNever;
      return r;
    }
    r.reached = true;
    r.observation = k;
    r.at_ms = to_ms(at);
    r.lower_ms = to_ms(lower);
    r.uncertainty_ms = to_ms(at - lower);
    r.verdict = !threshold || at <= *threshold ? Verdict::kOk : Verdict::kSlow;
    return r;
  }
  // Never is a claim about the whole timeout: only make it when the polls reached that far.
  r.verdict = last_known >= timeout ? Verdict::kNever : Verdict::kPending;
  return r;
}

}  // namespace

std::string_view stage_name(Stage stage) { return kStageNames[static_cast<std::size_t>(stage)]; }

std::string_view verdict_name(Verdict verdict) {
  return kVerdictNames[static_cast<std::size_t>(verdict)];
}

Result<std::vector<StageResult>> compute_stages(const Observation& baseline,
                                                const std::vector<Observation>& observations,
                                                const StageThresholds& thresholds,
                                                const StageTimeouts& timeouts, bool shared_watch,
                                                bool reboot_flow) {
  if (auto v = validate(baseline, observations); !v) return Unexpected<Error>{v.error()};
  const auto& base = baseline.target;
  std::vector<StageResult> out;

  out.push_back(time_stage(
      Stage::kDetected, observations,
      [&](std::size_t k) { return seen(detected(base, observations[k].target)); },
      thresholds.detected, timeouts.detected));

  out.push_back(time_stage(
      Stage::kDrained, observations,
      [&](std::size_t k) { return seen(observations[k].target.drained()); }, thresholds.drained,
      timeouts.drained));

  if (reboot_flow) {
    const auto requested = [](const sched::NodeState& n) {
      return n.has_flag("REBOOT_REQUESTED") || n.has_flag("REBOOT_ISSUED");
    };
    out.push_back(time_stage(
        Stage::kRebootRequested, observations, [&](std::size_t k) { return seen(requested(observations[k].target)); },
        std::nullopt, timeouts.returned));
    out.push_back(time_stage(
        Stage::kDown, observations,
        [&](std::size_t k) {
          const auto& n = observations[k].target;
          return seen(n.down() || n.not_responding() || n.has_flag("REBOOT_ISSUED"));
        },
        std::nullopt, timeouts.returned));
    // A BootTime is printed to the second ("2026-12-06T00:31:07"): a later boot prints a later one.
    out.push_back(time_stage(
        Stage::kRebooted, observations,
        [&](std::size_t k) {
          const auto& n = observations[k].target;
          return seen(!base.boot_time.empty() && !n.boot_time.empty() && n.boot_time > base.boot_time);
        },
        std::nullopt, timeouts.returned));
  }

  if (baseline.reservation || baseline.partition || baseline.job || baseline.workload) {
    std::vector<std::string> hows(observations.size());
    auto r = time_stage(
        Stage::kReplaced, observations,
        [&](std::size_t k) { return replaced(baseline, observations[k], shared_watch, hows[k]); },
        thresholds.replaced, timeouts.replaced);
    if (r.reached) r.how = hows[r.observation];
    out.push_back(std::move(r));
  } else {
    StageResult skipped;
    skipped.stage = Stage::kReplaced;
    skipped.name = std::string(stage_name(Stage::kReplaced));
    skipped.verdict = Verdict::kSkipped;
    if (thresholds.replaced)
      skipped.threshold_ms = static_cast<double>(thresholds.replaced->count());
    out.push_back(std::move(skipped));
  }

  // Returned counts from the first poll that saw detection, whether or not that was in time.
  auto first_detected = std::find_if(observations.begin(), observations.end(),
                                     [&](const auto& o) { return detected(base, o.target); });
  auto k_detected = static_cast<std::size_t>(first_detected - observations.begin());
  out.push_back(time_stage(
      Stage::kReturned, observations,
      [&](std::size_t k) { return seen(k > k_detected && in_service(observations[k].target)); },
      thresholds.returned, timeouts.returned));
  return out;
}

}  // namespace cmax::drill
