#include "agent/agent.h"
#include "signals/host_map.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "core/json_text.h"
#include "core/process.h"
#include "signals/classify.h"
#include "signals/prefix.h"

namespace cmax::agent {
namespace {

using Clock = std::chrono::steady_clock;

std::string label(const signals::Incident& inc) {
  if (inc.kind == signals::Kind::xid) return fmt::format("Xid {}", inc.code);
  if (inc.kind == signals::Kind::sxid) return fmt::format("SXid {}", inc.code);
  return std::string(signals::to_string(inc.kind));
}

// Seconds on the clock kmsg stamps records with (monotonic since boot, not counting suspend), so
// probe findings and log lines about one device fall in the same correlation windows.
double monotonic_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

void log_line(std::string_view level, std::string_view msg) {
  std::string out = "{\"level\":";
  core::append_json_string(out, level);
  out += ",\"msg\":";
  core::append_json_string(out, msg);
  out += "}\n";
  std::fwrite(out.data(), 1, out.size(), stderr);
}

int fleet_limit(const sched::PoolCount& pool, double max_percent, int max_nodes, std::string* why_out) {
  int limit = pool.total;
  std::string why;
  if (max_percent > 0) {
    limit = std::max(1, static_cast<int>(std::floor(pool.total * max_percent / 100.0)));
    why = fmt::format("{}% of {} = {} node{}", max_percent, pool.total, limit, limit == 1 ? "" : "s");
  }
  if (max_nodes > 0 && max_nodes < limit) {
    limit = max_nodes;
    why = fmt::format("{} node{}", limit, limit == 1 ? "" : "s");
  }
  if (why_out) *why_out = std::move(why);
  return limit;
}

std::optional<std::string> fleet_refusal(const sched::PoolCount& pool, double max_percent, int max_nodes) {
  if (pool.node_held) return std::nullopt;  // already out of service: nothing more is taken
  std::string why;
  const int limit = fleet_limit(pool, max_percent, max_nodes, &why);
  if (pool.held + 1 <= limit) return std::nullopt;
  return fmt::format("fleet circuit breaker: cmax already holds {} of {} nodes in {} (limit {})", pool.held,
                     pool.total, pool.pool, why);
}

void AgentStats::observe_latency(double seconds) {
  std::size_t b = 0;
  while (b < kLatencyBucketCount && seconds > kLatencyBuckets[b]) ++b;
  ++latency_buckets[b];
  latency_sum_us += static_cast<std::uint64_t>(seconds * 1e6);
}

std::string drill_reason_suffix(std::string_view drill) { return fmt::format(" [drill {}]", drill); }

std::string incident_key(const signals::Incident& inc) {
  // Each drill is an event of its own: a second drill on a node within the dedup window is acted
  // on again, as the first was.
  return fmt::format("{}|{}|{}|{}{}", inc.node, signals::to_string(inc.kind), inc.code,
                     signals::pci_without_function(inc.device), inc.drill.empty() ? "" : "|drill-" + inc.drill);
}

Result<std::string> read_boot_id(const std::string& path) {
  std::ifstream in(path);
  std::string id;
  if (!(in >> id) || id.empty()) return fail("read {}: cannot read this boot's id", path);
  return id;
}

Agent::Agent(AgentOptions options, const signals::Catalog& catalog, EventLog& log, sched::Scheduler& scheduler)
    : options_(std::move(options)),
      catalog_(catalog),
      log_(log),
      scheduler_(scheduler),
      correlator_(std::make_unique<signals::Correlator>(catalog)),
      driver_branch_(options_.driver_branch > 0 ? options_.driver_branch : signals::nvidia_driver_branch()) {}

Agent::~Agent() = default;

Result<void> Agent::add_probe(std::unique_ptr<probes::Probe> probe, std::chrono::milliseconds interval,
                              std::chrono::milliseconds budget) {
  const std::size_t i = stats_.probe_count;
  if (i >= AgentStats::kMaxProbes) return fail("add probe {}: at most {} probes", probe->name(), AgentStats::kMaxProbes);
  stats_.probes[i].name = std::string(probe->name());
  probes_.push_back(ProbeEntry{std::move(probe), interval, budget, &stats_.probes[i]});
  stats_.probe_count = i + 1;
  return ok();
}

double Agent::now_unix() const {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Result<void> Agent::run(std::stop_token stop) {
  std::optional<std::uint64_t> resume;
  stats_.start_unix = static_cast<std::uint64_t>(now_unix());
  {
    std::lock_guard lock(log_mu_);
    // Clears recorded before this start (`cmaxd clear` while the agent was down) are already in
    // effect: a drain before the last clear never deduplicates a new one.
    if (auto c = log_.last_clear(); c && *c) {
      clears_seen_ = (*c)->id;
      last_clear_unix_ = (*c)->t_requested;
    }
    auto rp = log_.resume_point();
    if (!rp) return Unexpected<Error>{rp.error()};
    if (*rp && (*rp)->boot_id == options_.boot_id) resume = (*rp)->seq;
    // Intents written before a crash, never finished: carry them out now (every verb is idempotent).
    auto pending = log_.pending_actions();
    if (!pending) return Unexpected<Error>{pending.error()};
    for (auto& a : *pending) queue_.push_back(Request{a.id, a.incident, a.verb, a.reason, Clock::now()});
  }
  auto follower = KmsgFollower::open(options_.kmsg_path, resume);
  if (!follower) return Unexpected<Error>{follower.error()};
  const bool skipped = !resume && options_.from_now;
  if (skipped)
    if (auto r = follower->skip_to_end(); !r) return Unexpected<Error>{r.error()};
  log_line("info", fmt::format("cmaxd: node {}, reading {} {}, acting at {} on {} records{}", options_.node,
                               options_.kmsg_path,
                               resume    ? fmt::format("after seq {}", *resume)
                               : skipped ? std::string("from now on")
                                         : std::string("from the start of this boot"),
                               signals::to_string(options_.drain_at),
                               options_.act_on == Origins::any ? "kernel and userspace" : "kernel",
                               options_.dry_run ? " (dry run)" : ""));
  std::jthread worker_thread([this](std::stop_token st) { worker(st); });
  // A scheduler that pushes changes is watched only while this agent holds the node: an idle
  // agent sends nothing. One without is polled by the worker every resume_watch.
  std::jthread resume_thread;
  if (options_.resume_watch.count() > 0 && scheduler_.watches_resume())
    resume_thread = std::jthread([this](std::stop_token st) { resume_loop(st); });
  std::vector<std::jthread> probe_threads;
  for (auto& entry : probes_)
    probe_threads.emplace_back([this, &entry](std::stop_token st) { probe_loop(entry, st); });
  auto last_flush = Clock::now();
  Result<void> result = ok();
  // The backlog (what the ring buffer held at the start) is read once the log has been quiet for
  // a moment: a record can become readable a little after its writer returned.
  // On a node whose log never pauses, a record stamped a second after the start ends it as well.
  catching_up_ = true;
  const auto started_usec = static_cast<std::uint64_t>(monotonic_seconds() * 1e6);
  while (!stop.stop_requested()) {
    auto rec = follower->next(catching_up_ ? std::chrono::milliseconds(100) : options_.poll);
    if (!rec) {
      result = Unexpected<Error>{rec.error()};
      break;
    }
    if (catching_up_ && (!*rec || (*rec)->usec > started_usec + 1000000)) {
      catching_up_ = false;
      replay_deferred();
    }
    if (*rec) process(**rec);
    stats_.lost = follower->lost();
    if (Clock::now() - last_flush >= options_.flush) {
      flush();
      take_clear();
      stats_.in_boot_grace = in_boot_grace(monotonic_seconds());
      stats_.heartbeat_unix = static_cast<std::uint64_t>(now_unix());
      last_flush = Clock::now();
    }
  }
  for (auto& t : probe_threads) t.request_stop();
  probe_threads.clear();  // joins: a poll ends within its budget
  flush();
  worker_thread.request_stop();
  cv_.notify_all();
  return result;
}

void Agent::probe_loop(ProbeEntry& entry, std::stop_token stop) {
  std::string last_error;
  std::vector<std::string> last_problems;
  while (!stop.stop_requested()) {
    const auto start = Clock::now();
    auto found = entry.probe->poll(entry.budget);
    ++entry.slot->polls;
    entry.slot->last_duration_us = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
    if (!found) {
      ++entry.slot->errors;
      // Said once per distinct error, not once per poll.
      if (found.error().message != last_error) log_line("warn", fmt::format("probe {}: {}", entry.slot->name, found.error().message));
      last_error = found.error().message;
    } else {
      if (!last_error.empty()) log_line("info", fmt::format("probe {}: reading again", entry.slot->name));
      last_error.clear();
      for (const auto& f : *found) {
        ++entry.slot->findings;
        observe(entry.slot->name, f);
      }
    }
    // Configuration trouble (a mount path that does not exist) is logged once when it appears.
    auto problems = entry.probe->problems();
    for (const auto& p : problems)
      if (std::find(last_problems.begin(), last_problems.end(), p) == last_problems.end())
        log_line("warn", fmt::format("probe {}: {}", entry.slot->name, p));
    last_problems = std::move(problems);
    // Its own condition variable: a notify meant for the action worker must never wake this instead.
    std::unique_lock q(probe_mu_);
    probe_cv_.wait_until(q, stop, start + entry.interval, [] { return false; });
  }
}

void Agent::observe(std::string_view probe, const probes::Finding& f) {
  const auto detected = Clock::now();
  const signals::Signal sig = probes::signal_of(f);
  signals::LineInfo info;
  info.message = f.text;
  info.time = monotonic_seconds();
  info.has_time = true;
  std::lock_guard lock(detect_mu_);
  ++stats_.signals;
  handle(sig, info, f.text, std::nullopt, "probe:" + std::string(probe), true, detected);
}

void Agent::process(const KmsgRecord& rec) {
  const auto detected = Clock::now();
  ++stats_.records;
  last_seq_ = rec.seq;
  stats_.last_seq = rec.seq;
  const double lag_us = monotonic_seconds() * 1e6 - static_cast<double>(rec.usec);
  stats_.kmsg_lag_us = lag_us > 0 ? static_cast<std::uint64_t>(lag_us) : 0;
  auto info = signals::parse_line_prefix(rec.line, 1970);
  if (info.message.find(signals::kDrillMarker) != std::string_view::npos) {
    if (auto mk = signals::parse_drill_marker(info.message)) {
      std::lock_guard lock(detect_mu_);
      drills_.on_marker(options_.node, *mk);
      log_line("info", fmt::format("drill {} {} on {}", mk->id, mk->end ? "ended" : "began (" + mk->scenario + ")",
                                   options_.node));
      return;
    }
  }
  auto sig = signals::classify(info.message);
  if (!sig) return;
  ++stats_.signals;
  // This host's own log: its driver branch (the Xid 144-150 decode) and its RDMA devices' PCI addresses.
  sig->driver_branch = driver_branch_;
  std::string mapped;
  if (!sig->device.empty() && !signals::is_pci(sig->device) &&
      (sig->kind == signals::Kind::efa_admin || sig->kind == signals::Kind::ib_health ||
       sig->kind == signals::Kind::mlx5_fatal)) {
    mapped = signals::rdma_device_pci(sig->device);
    if (!mapped.empty()) sig->device = mapped;
  }
  static const std::string kKernel = "kernel", kUserspace = "userspace";
  std::lock_guard lock(detect_mu_);
  // A drill's line is acted on like the fault it imitates while the drill runs (that is what the
  // drill measures), and the action names the drill; once the drill ended it is skipped, so a
  // restart that reads the log again does not take the node out a second time.
  auto drill = drills_.match(options_.node, info.message, now_unix());
  if (drill) {
    ++stats_.drill_lines;
    if (catching_up_ && deferred_.size() < 100000) {
      deferred_.push_back({drill->id, rec.line, rec.seq, rec.from_kernel()});
      return;
    }
    if (!drill->live) {
      ++stats_.drill_lines_ended;
      return;
    }
  }
  handle(*sig, info, rec.line, rec.seq, rec.from_kernel() ? kKernel : kUserspace, rec.from_kernel(), detected,
         drill ? std::string_view(drill->id) : std::string_view());
}

void Agent::replay_deferred() {
  std::lock_guard lock(detect_mu_);
  static const std::string kKernel = "kernel", kUserspace = "userspace";
  for (const auto& d : deferred_) {
    if (!drills_.live(options_.node, d.drill, now_unix())) {
      ++stats_.drill_lines_ended;
      continue;
    }
    auto info = signals::parse_line_prefix(d.line, 1970);
    if (auto sig = signals::classify(info.message))
      handle(*sig, info, d.line, d.seq, d.from_kernel ? kKernel : kUserspace, d.from_kernel, Clock::now(), d.drill);
  }
  deferred_.clear();
}

void Agent::handle(const signals::Signal& sig, const signals::LineInfo& info, std::string_view line,
                   std::optional<std::uint64_t> seq, const std::string& origin, bool from_kernel,
                   Clock::time_point detected, std::string_view drill) {
  // A long-running agent starts its incidents over at the cap; the event log keeps the history
  // and still deduplicates actions.
  if (correlator_->incidents().size() >= signals::Correlator::kIncidentCap) forget_incidents();
  signals::Event e{&options_.node, &info, &sig, line, drill};
  if (!correlator_->add(e)) return;
  auto index = correlator_->last_incident();
  if (!index) return;
  const signals::Incident& inc = correlator_->incidents()[*index];
  ++stats_.by_kind_action[static_cast<int>(inc.kind)][static_cast<int>(inc.action)];
  const bool opened = !event_of_.count(*index);
  stats_.devices.line(DeviceKey{std::string(signals::to_string(inc.kind)), inc.code >= 0 ? std::to_string(inc.code) : "",
                                inc.device},
                      opened);
  std::int64_t event_id = -1;
  if (!opened) {
    event_id = event_of_.find(*index)->second;
    ++repeats_[*index];
  } else {
    stats_.last_incident_unix = static_cast<std::uint64_t>(now_unix());
    EventRow row{options_.boot_id, seq, now_unix(), incident_key(inc), inc.node,
                 std::string(signals::to_string(inc.kind)), inc.device, std::string(signals::to_string(inc.action)),
                 origin, std::string(line), inc.code};
    std::lock_guard lock(log_mu_);
    if (auto id = log_.record_event(row)) {
      event_id = *id;
    } else {
      log_line("error", id.error().message);
    }
    event_of_[*index] = event_id;
    ++stats_.incidents;
  }
  if (inc.resolved) {
    // The signal closed an incident we acted on: give the node back once nothing else holds it.
    if (acted_.count(*index) && acted_[*index]) {
      acted_[*index] = false;
      stats_.devices.set_open(signals::to_string(inc.kind), inc.device, false);
      bool still_held = false;
      for (const auto& [i, held] : acted_) still_held |= held;
      if (!still_held) act_on(inc, *index, event_id, detected);
    }
    return;
  }
  if (acted_[*index]) {
    // Held for this incident already. On a scheduler without a watch the held node is read ever
    // less often; a recurrence says it may be back in service (resumed by someone else): read now,
    // and the next recurrence acts if it is.
    if (holding_ && options_.resume_watch.count() > 0 && !scheduler_.watches_resume() &&
        !resume_check_now_.exchange(true)) {
      std::lock_guard q(mu_);
      cv_.notify_all();
    }
    return;
  }
  if (inc.action < options_.drain_at) return;
  if (options_.act_on == Origins::kernel && !from_kernel) {
    ++stats_.userspace_ignored;
    return;
  }
  // Printed while the node was still booting (the kmsg stamp, or the uptime for a probe): recorded,
  // not acted on; the same fault after the grace acts (acted_ stays unset). A drill is never deferred.
  if (drill.empty() && info.has_time && in_boot_grace(info.time)) {
    ++stats_.boot_deferred;
    log_line("info", fmt::format("{} {} at {:.0f} s after boot: inside the boot grace of {} s, not acted on",
                                 signals::to_string(inc.kind), inc.device, info.time, options_.boot_grace.count()));
    return;
  }
  acted_[*index] = true;
  stats_.devices.set_open(signals::to_string(inc.kind), inc.device, true);
  act_on(inc, *index, event_id, detected);
}

void Agent::act_on(const signals::Incident& inc, std::size_t, std::int64_t event_id, Clock::time_point detected) {
  const std::string key = incident_key(inc);
  std::string verb = inc.resolved ? "resume"
                     : options_.reboot && inc.action >= signals::Action::reboot_node ? "reboot"
                                                                                       : "drain";
  std::string reason = fmt::format("{}{} {} {} ({}){}", sched::kReasonPrefix, label(inc), inc.device,
                                   signals::to_string(inc.action), inc.resolved ? "resolved" : inc.reason,
                                   inc.drill.empty() ? std::string() : drill_reason_suffix(inc.drill));
  const double now = now_unix();
  std::lock_guard lock(log_mu_);
  if (verb != "resume") {
    auto last = log_.last_action(key);
    if (last && *last && (*last)->verb == verb && (*last)->status != "failed" && (*last)->status != "refused" &&
        (*last)->t_requested > last_clear_unix_ &&
        now - (*last)->t_requested < static_cast<double>(options_.dedup_window.count())) {
      ++stats_.actions_deduplicated;
      if (!holding_) stats_.devices.set_open(signals::to_string(inc.kind), inc.device, false);
      return;
    }
  }
  auto id = log_.begin_action(key, event_id, verb, options_.node, reason, now);
  if (!id) {
    log_line("error", id.error().message);
    return;
  }
  auto refuse = [&](const std::string& why) {
    ++stats_.actions_refused;
    stats_.count_action(verb, "refused");
    stats_.devices.set_open(signals::to_string(inc.kind), inc.device, false);
    (void)log_.finish_action(*id, "refused", why, now);
    log_line("warn", fmt::format("{} {}: refused: {}", verb, options_.node, why));
  };
  if (verb != "resume") {
    auto recent = log_.count_actions(verb, now - static_cast<double>(options_.breaker_window.count()));
    // The intent just written counts itself.
    if (recent && *recent > options_.breaker_max_actions)
      return refuse(fmt::format("circuit breaker: {} {} actions in the last {} s (limit {})", *recent - 1, verb,
                                options_.breaker_window.count(), options_.breaker_max_actions));
  }
  {
    std::lock_guard q(mu_);
    if (queue_.size() >= options_.queue_max) return refuse("action queue full");
    queue_.push_back(Request{*id, key, verb, reason, detected});
  }
  ++stats_.actions_requested;
  cv_.notify_one();
}

void Agent::flush() {
  std::lock_guard detect(detect_mu_);
  std::lock_guard lock(log_mu_);
  for (auto& [index, n] : repeats_) {
    if (n == 0) continue;
    if (auto it = event_of_.find(index); it != event_of_.end() && it->second >= 0)
      if (auto r = log_.add_repeats(it->second, n, last_seq_.value_or(0)); !r) log_line("error", r.error().message);
    n = 0;
  }
  if (last_seq_ && last_seq_ != saved_seq_) {  // idle: nothing to write
    if (auto r = log_.save_resume_point(ResumePoint{options_.boot_id, *last_seq_}); !r) {
      log_line("error", r.error().message);
    } else {
      saved_seq_ = last_seq_;
    }
  }
}

void Agent::worker(std::stop_token stop) {
  for (;;) {
    Request r;
    {
      std::unique_lock q(mu_);
      bool got = true;
      if (options_.resume_watch.count() > 0 && !scheduler_.watches_resume()) {
        if (resume_poll_.count() <= 0) resume_poll_ = options_.resume_watch;
        got = cv_.wait_for(q, stop, resume_poll_, [&] { return !queue_.empty() || resume_check_now_.load(); });
        if (got && queue_.empty()) got = false;  // woken to read the held node now
      } else {
        cv_.wait(q, stop, [&] { return !queue_.empty(); });
      }
      if (stop.stop_requested()) return;
      if (!got) {
        q.unlock();
        resume_check_now_ = false;
        watch_resume();
        continue;
      }
      r = std::move(queue_.front());
      queue_.pop_front();
    }
    execute(r, stop);
  }
}

void Agent::watch_resume() {
  if (!holding_) {
    resume_poll_ = options_.resume_watch;
    held_since_ = {};
    return;
  }
  auto st = scheduler_.node_state(options_.node);
  if (!st) ++stats_.scheduler_errors;
  if (!st || st->out_of_service()) {
    // Unreadable, or still out: nothing to record. Past the steady stretch of a hold, the next
    // read waits twice as long (capped).
    const auto now = Clock::now();
    if (st) last_out_read_ = now;
    if (held_since_ == Clock::time_point{}) held_since_ = now;
    if (now - held_since_ >= options_.resume_watch_steady)
      resume_poll_ = std::min(std::max(resume_poll_, options_.resume_watch) * 2,
                              std::max(options_.resume_watch_max, options_.resume_watch));
    return;
  }
  const auto late = last_out_read_ == Clock::time_point{}
                        ? resume_poll_
                        : std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_out_read_);
  resume_poll_ = options_.resume_watch;
  last_out_read_ = {};
  held_since_ = {};
  record_observed_resume(*st, late);
}

void Agent::resume_loop(std::stop_token stop) {
  std::chrono::milliseconds backoff{1000};
  while (!stop.stop_requested()) {
    {
      std::unique_lock h(hold_mu_);
      hold_cv_.wait(h, stop, [&] { return holding_.load(); });
      if (stop.stop_requested()) return;
    }
    auto st = scheduler_.wait_in_service(options_.node, stop);
    if (stop.stop_requested()) return;
    if (!st) {
      // The API server is away or the watch broke: try again, backing off, without losing the hold.
      log_line("warn", fmt::format("{} (watching again in {} ms)", st.error().message, backoff.count()));
      std::unique_lock h(hold_mu_);
      hold_cv_.wait_for(h, stop, backoff, [] { return false; });
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, options_.retry_max);
      continue;
    }
    backoff = std::chrono::milliseconds(1000);
    if (*st) record_observed_resume(**st);
  }
}

void Agent::record_observed_resume(const sched::NodeState& st, std::chrono::milliseconds late) {
  {
    // This agent's own resume is recorded by execute(); only one made by someone else is here.
    std::lock_guard h(hold_mu_);
    if (!holding_ || self_resuming_) return;
    holding_ = false;
    stats_.held = false;
  }
  stats_.devices.close_all();
  const double now = now_unix();
  std::string reason = fmt::format("observed: {} is back in service ({}), resumed by someone else", options_.node,
                                   st.state);
  if (late.count() > 0) reason += fmt::format(" at most {:.1f} s before this read", late.count() / 1000.0);
  {
    std::lock_guard lock(log_mu_);
    auto id = log_.begin_action(options_.node, -1, "resume", options_.node, reason, now);
    if (!id) {
      log_line("error", id.error().message);
    } else if (auto f = log_.finish_action(*id, "done", "read from the scheduler", now); !f) {
      log_line("error", f.error().message);
    }
  }
  {
    // The incidents it held for are over: a new fault acts again.
    std::lock_guard detect(detect_mu_);
    for (auto& [index, held] : acted_) held = false;
  }
  ++stats_.resumes_observed;
  log_line("info", reason);
  if (auto r = scheduler_.release_hold(options_.node); !r) log_line("warn", r.error().message);
}

Result<Agent::Attempt> Agent::attempt_action(const Request& r) {
  Attempt out;
  if (r.verb != "resume" && options_.fleet_breaker) {
    // Read before each attempt: other nodes' agents drain too.
    auto pool = scheduler_.held_by_cmax(options_.node);
    if (!pool) return Unexpected<Error>{pool.error()};
    if ((out.refusal = fleet_refusal(*pool, options_.fleet_max_percent, options_.fleet_max_nodes))) return out;
    // The read said yes; the slot is then taken through the control plane's own serialisation,
    // so that agents faulting in the same instant cannot all take the last one.
    auto claim = scheduler_.claim_hold(options_.node, *pool,
                                       fleet_limit(*pool, options_.fleet_max_percent, options_.fleet_max_nodes, nullptr));
    if (!claim) return Unexpected<Error>{claim.error()};
    if (!claim->granted) {
      out.refusal = claim->why;
      return out;
    }
    if (!claim->exact && !claim->why.empty() && !breaker_not_exact_said_.exchange(true)) log_line("warn", claim->why);
  }
  auto res = r.verb == "drain"    ? scheduler_.drain(options_.node, r.reason)
             : r.verb == "reboot" ? scheduler_.reboot(options_.node, r.reason)
                                  : scheduler_.resume(options_.node, sched::Force::kNo);
  if (!res) return Unexpected<Error>{res.error()};
  out.action = std::move(*res);
  return out;
}

void Agent::forget_incidents() {
  correlator_ = std::make_unique<signals::Correlator>(catalog_);
  event_of_.clear();
  repeats_.clear();
  acted_.clear();
}

bool Agent::in_boot_grace(double seconds_since_boot) const {
  return options_.boot_grace.count() > 0 && seconds_since_boot < static_cast<double>(options_.boot_grace.count());
}

void Agent::take_clear() {
  std::optional<ActionRow> c;
  {
    std::lock_guard lock(log_mu_);
    auto last = log_.last_clear();
    if (!last) {
      log_line("error", last.error().message);
      return;
    }
    if (!*last || (*last)->id <= clears_seen_) return;
    c = **last;
  }
  clears_seen_ = c->id;
  clear(c->reason);
}

void Agent::clear(const std::string& why) {
  {
    std::lock_guard detect(detect_mu_);
    forget_incidents();
    last_clear_unix_ = now_unix();
  }
  stats_.devices.close_all();
  ++stats_.clears;
  log_line("info", fmt::format("cmaxd clear on {}: {}; every incident forgotten, the next fault acts again{}",
                               options_.node, why, holding_ ? " (the node stays drained: resume it yourself)" : ""));
}

void AgentStats::count_action(std::string_view verb, std::string_view status) {
  for (std::size_t v = 0; v < std::size(kVerbs); ++v)
    for (std::size_t st = 0; st < std::size(kStatuses); ++st)
      if (kVerbs[v] == verb && kStatuses[st] == status) ++node_actions[v][st];
}

void Agent::execute(const Request& r, std::stop_token stop) {
  std::chrono::milliseconds backoff{100};
  std::string status = "failed", detail;
  if (r.verb == "resume") {
    std::lock_guard h(hold_mu_);
    self_resuming_ = true;
  }
  const auto called = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - r.detected);
  for (int attempt = 1; attempt <= options_.retries; ++attempt) {
    auto res = attempt_action(r);
    if (res && res->refusal) {
      status = "refused";
      detail = *res->refusal;
      break;
    }
    if (res) {
      // A node that was already drained (or in service, for a resume) was not changed: the
      // action is recorded as "unchanged", which the breaker does not count and SLA accounting
      // does not take for the start of an outage.
      status = res->action.dry_run ? "dry_run" : res->action.changed ? "done" : "unchanged";
      detail = !res->action.note.empty() ? res->action.note : core::describe_argv(res->action.argv);
      break;
    }
    detail = res.error().message;
    ++stats_.scheduler_errors;
    // A refused resume (someone else's drain) is final; anything else may be the controller: retry.
    if (r.verb == "resume" || attempt == options_.retries) break;
    log_line("warn", fmt::format("{} (attempt {} of {}; retrying in {} ms)", detail, attempt, options_.retries,
                                 backoff.count()));
    {
      // A stop ends the wait at once; the action stays pending in the log for the next start.
      std::unique_lock q(mu_);
      if (cv_.wait_for(q, stop, backoff, [] { return false; }); stop.stop_requested()) return;
    }
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, options_.retry_max);
  }
  const auto latency = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - r.detected);
  stats_.last_action_latency_us = static_cast<std::uint64_t>(latency.count());
  stats_.observe_latency(static_cast<double>(latency.count()) / 1e6);
  (status == "failed" ? stats_.actions_failed : status == "refused" ? stats_.actions_refused : stats_.actions_done)++;
  stats_.count_action(r.verb, status);
  {
    std::lock_guard h(hold_mu_);
    if (status == "done" || status == "unchanged") holding_ = r.verb != "resume";
    resume_poll_ = options_.resume_watch;  // a new hold (or none) is read at the first interval again
    if (status == "done" || status == "unchanged") {
      if (r.verb == "resume") held_since_ = {};
      else if (held_since_ == Clock::time_point{}) held_since_ = Clock::now();
    }
    self_resuming_ = false;
    stats_.held = holding_.load();
  }
  hold_cv_.notify_all();
  if (r.verb == "resume" && (status == "done" || status == "unchanged")) stats_.devices.close_all();
  // A drain that failed or was refused holds nothing: no incident is open on a node in service.
  if (r.verb != "resume" && (status == "failed" || status == "refused") && !holding_) stats_.devices.close_all();
  if (r.verb == "resume" && (status == "done" || status == "unchanged"))
    if (auto rel = scheduler_.release_hold(options_.node); !rel) log_line("warn", rel.error().message);
  log_line(status == "failed" ? "error" : status == "refused" ? "warn" : "info",
           fmt::format("{} {} {}: {} (record read -> scheduler called {:.3f} ms, returned {:.3f} ms)", r.verb,
                       options_.node, status, detail, called.count() / 1000.0, latency.count() / 1000.0));
  std::lock_guard lock(log_mu_);
  if (auto f = log_.finish_action(r.action_id, status, detail, now_unix()); !f) log_line("error", f.error().message);
}

}  // namespace cmax::agent

