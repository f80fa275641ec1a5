#include "drill/watch.h"

#include <thread>

#include "core/process.h"
#include "core/strings.h"

namespace cmax::drill {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::microseconds since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
}

}  // namespace

Result<Reservation> read_reservation(const sched::SlurmOptions& options, const std::string& name) {
  core::ProcessSpec spec{{options.scontrol, "-o", "show", "reservation", name}, options.timeout, 1u << 20};
  if (!options.conf_path.empty()) spec.extra_env.push_back("SLURM_CONF=" + options.conf_path);
  spec.extra_env.push_back("SLURM_TIME_FORMAT=standard");
  auto r = core::run_process(spec);
  if (!r) return Unexpected<Error>{r.error()};
  if (r->timed_out) return fail("read reservation {}: scontrol timed out after {} ms", name, options.timeout.count());
  if (r->exit_code != 0)
    return fail("read reservation {}: scontrol exited {}: {}", name, r->exit_code,
                core::clip(core::trim(r->err.empty() ? r->out : r->err), 300));
  auto res = parse_scontrol_reservation(r->out);
  if (!res) return fail("read reservation {}: {}", name, res.error().message);
  return res;
}

Result<Observation> observe(sched::SlurmScheduler& slurm, const WatchOptions& options, Clock::time_point t0) {
  Observation o;
  o.t_start = since(t0);
  auto s = slurm.node_state(options.node);
  if (!s) return Unexpected<Error>{s.error()};
  o.target = std::move(*s);
  if (options.reservation) {
    auto r = read_reservation(slurm.options(), *options.reservation);
    if (r) o.reservation = std::move(*r);  // a failed read teaches the reservation stages nothing this time
  }
  o.t_end = since(t0);
  return o;
}

std::vector<Observation> watch(sched::SlurmScheduler& slurm, const WatchOptions& options, const Observation& baseline,
                               Clock::time_point t0, std::stop_token stop, int& failed_polls) {
  std::vector<Observation> seen;
  // The longest any awaited stage may still come.
  auto horizon = std::max(options.timeouts.detected, options.timeouts.drained);
  if (options.reservation) horizon = std::max(horizon, options.timeouts.replaced);
  if (options.wait_return) horizon = std::max(horizon, options.timeouts.returned);
  // A stage is "never" only once a poll began after its timeout (timeline.h): poll until one has.
  auto last_start = std::chrono::microseconds(-1);
  while (!stop.stop_requested() && last_start < horizon) {
    const auto poll_start = since(t0);
    auto o = observe(slurm, options, t0);
    last_start = poll_start;  // a failed poll moves time on too: an unreachable controller ends the watch
    if (o) {
      seen.push_back(std::move(*o));
      auto stages = compute_stages(baseline, seen, StageThresholds{}, options.timeouts);
      if (stages) {
        bool done = true;
        for (const auto& st : *stages) {
          const bool awaited = st.stage == Stage::kDetected || st.stage == Stage::kDrained ||
                               (st.stage == Stage::kReplaced && options.reservation) ||
                               (st.stage == Stage::kReturned && options.wait_return);
          if (!awaited || st.reached) continue;
          // Not yet seen: still awaited while its timeout has not passed.
          const auto timeout = st.stage == Stage::kDetected  ? options.timeouts.detected
                               : st.stage == Stage::kDrained ? options.timeouts.drained
                               : st.stage == Stage::kReplaced ? options.timeouts.replaced
                                                              : options.timeouts.returned;
          if (last_start < timeout) done = false;
        }
        // Never detected by its timeout: nothing later can come either.
        if (!(*stages)[0].reached && last_start >= options.timeouts.detected) done = true;
        if (done) break;
      }
    } else {
      ++failed_polls;
    }
    std::this_thread::sleep_for(options.poll);
  }
  return seen;
}

}  // namespace cmax::drill
