#include "cluster/slurm_fanout.h"

#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "cluster/frame.h"
#include "core/process.h"
#include "core/strings.h"
#include "sched/slurm.h"

namespace cmax::cluster {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxStderr = 64u << 10;

std::vector<std::string> slurm_env(const SlurmFanoutOptions& o) {
  std::vector<std::string> env = {"SLURM_TIME_FORMAT=standard"};
  if (!o.slurm_conf.empty()) env.push_back("SLURM_CONF=" + o.slurm_conf);
  return env;
}

// A client tool that did not finish: what it had said by then is usually the cause.
std::string said(const core::ProcessResult& r) {
  auto err = core::trim(r.err.empty() ? r.out : r.err);
  return err.empty() ? std::string() : fmt::format("; it said: {}", core::clip(err, 300));
}

Result<std::vector<SinfoNode>> list_nodes(const SlurmFanoutOptions& o) {
  std::vector<std::string> argv = {"sinfo", "-h", "-N", "-o", "%N|%T|%E"};
  if (!o.partition.empty()) argv.insert(argv.end(), {"-p", o.partition});
  if (!o.nodelist.empty()) argv.insert(argv.end(), {"-n", o.nodelist});
  auto r = core::run_process({argv, o.tool_timeout, 16u << 20, slurm_env(o)});
  if (!r) return fail("list the cluster's nodes: {}; is Slurm's client installed and SLURM_CONF set?", r.error().message);
  if (r->timed_out)
    return fail("list the cluster's nodes: {} did not answer in {} ms{}; is slurmctld up and reachable? (scontrol ping)",
                core::describe_argv(argv), o.tool_timeout.count(), said(*r));
  if (r->exit_code != 0)
    return fail("list the cluster's nodes: {} exited {}: {}", core::describe_argv(argv), r->exit_code,
                core::clip(core::trim(r->err), 300));
  auto nodes = parse_sinfo_nodes(r->out);
  if (!nodes) return Unexpected<Error>{nodes.error()};
  if (nodes->empty())
    return fail("list the cluster's nodes: sinfo lists no node{}{}", o.partition.empty() ? "" : " in partition " + o.partition,
                o.nodelist.empty() ? "" : " matching " + o.nodelist);
  return nodes;
}

// The cluster's reservations. A failure to read them is not fatal: the plan goes on without
// (a reserved node then shows up as queued, with Slurm's reason), and the log says why.
Result<std::vector<sched::Reservation>> list_reservations(const SlurmFanoutOptions& o) {
  std::vector<std::string> argv = {"scontrol", "-o", "show", "reservation"};
  auto r = core::run_process({argv, o.tool_timeout, 16u << 20, slurm_env(o)});
  if (!r) return fail("read reservations: {}", r.error().message);
  if (r->timed_out) return fail("read reservations: {} did not answer in {} ms{}", core::describe_argv(argv), o.tool_timeout.count(), said(*r));
  if (r->exit_code != 0)
    return fail("read reservations: {} exited {}: {}", core::describe_argv(argv), r->exit_code, core::clip(core::trim(r->err), 300));
  return sched::parse_scontrol_reservations(r->out);
}

std::string user_name() {
  if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_name != nullptr) return pw->pw_name;
  return std::to_string(::geteuid());
}

// Slurm's reason for a pending job ("ReqNodeNotAvail, May be reserved for other job"), or empty.
std::string pending_reason(const SlurmFanoutOptions& o, const std::string& job) {
  auto r = core::run_process({{"squeue", "-h", "-j", job, "-o", "%r"}, std::min(o.tool_timeout, std::chrono::milliseconds(3000)),
                              1u << 16, slurm_env(o)});
  if (!r || r->timed_out || r->exit_code != 0) return {};
  return std::string(core::trim(r->out));
}

// What to do about a step Slurm queued, from its reason.
std::string queued_advice(std::string_view reason, std::string_view reservation) {
  if (reason.find("eserv") != std::string_view::npos || reason.find("ReqNodeNotAvail") != std::string_view::npos ||
      reason.find("not available") != std::string_view::npos)
    return reservation.empty()
               ? "the node is held by a reservation (or one starts within the job's time limit): name it with "
                 "--reservation, or run when it ends"
               : "a reservation the job cannot use holds the node, or one starts within the job's time limit "
                 "(scontrol show reservation)";
  if (reason.find("Resources") != std::string_view::npos || reason.find("Priority") != std::string_view::npos ||
      reason.find("busy") != std::string_view::npos)
    return "the node is busy with other jobs: run cmax inside their allocation (salloc, then cmax run --harness "
           "slurm) or when it is idle";
  return "see squeue's reason and the partition's limits (scontrol show partition)";
}

// Settled nodes, shared by the sruns that run side by side.
class Settled {
 public:
  explicit Settled(const NodeCallback& on_node) : on_node_(on_node) {}
  void settle(NodeOutput out) {
    std::lock_guard lock(mu_);
    if (done_.contains(out.node)) return;
    if (on_node_) on_node_(out);
    done_.emplace(out.node, std::move(out));
  }
  bool contains(std::string_view node) const {
    std::lock_guard lock(mu_);
    return done_.contains(node);
  }
  std::map<std::string, NodeOutput, std::less<>> take() {
    std::lock_guard lock(mu_);
    return std::move(done_);
  }

 private:
  const NodeCallback& on_node_;
  mutable std::mutex mu_;
  std::map<std::string, NodeOutput, std::less<>> done_;
};

// One srun over `nodes`. Settles every node it hears about; returns the nodes it left open
// (killed with the step when srun aborted it, or not heard from by the deadline) and why.
struct Round {
  std::vector<std::string> open;
  std::string fatal;        // the line srun ended the step with; empty when it did not
  bool queued = false;      // Slurm queued the step or refused it because its nodes are taken
  std::string queued_job;   // the job id when Slurm queued the step instead of starting it
  std::string pending;      // srun's words for why (the line before "queued")
  std::string reason;       // squeue's reason for the pending job
  bool refused = false;     // the reservation does not admit us
  bool any_unreachable = false;
  int exit = -1;
};

Round run_round(const std::vector<std::string>& nodes, const std::string& reservation, const SlurmFanoutOptions& o,
                Clock::time_point start, Clock::time_point deadline, std::string& log, Settled& done) {
  Round round;
  auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  auto in_round = [&](std::string_view node) { return std::find(nodes.begin(), nodes.end(), node) != nodes.end(); };
  auto open_count = [&] {
    std::size_t n = 0;
    for (const auto& node : nodes) n += done.contains(node) ? 0 : 1;
    return n;
  };
  SrunOptions so{o.collect_argv, o.partition, o.job_name, o.overlap, reservation, o.node_timeout, o.queue_wait};
  auto argv = srun_argv(nodes, so);
  log += core::describe_argv(argv) + "\n";
  auto child = core::Child::spawn({argv, o.node_timeout, 0, slurm_env(o)});
  if (!child) {
    for (const auto& node : nodes)
      done.settle({node, NodeStatus::unreachable, {}, fmt::format("srun could not start: {}", child.error().message), 0});
    log += "could not start: " + child.error().message + "\n";
    return round;
  }

  FrameDecoder decoder([&](FramedDocument d) {
    std::string node = d.node;
    if (!in_round(node)) return;  // a document from a node not asked (a renamed host): ignored
    if (!d.error.empty()) done.settle({node, NodeStatus::failed, {}, "its document was damaged: " + d.error, seconds()});
    else done.settle({node, NodeStatus::ok, std::move(d.document), {}, seconds()});
  });
  std::string stderr_text, err_line, last_info;
  auto on_err_line = [&](std::string_view line) {
    if (stderr_text.size() < kMaxStderr) {
      stderr_text.append(line.substr(0, kMaxStderr - stderr_text.size()));
      stderr_text += '\n';
    }
    if (auto job = parse_srun_queued(line)) {
      round.queued = true;
      round.queued_job = *job;
      round.pending = last_info;
      round.reason = pending_reason(o, *job);
      return;
    }
    if (is_reservation_refusal(line)) round.refused = true;
    if (auto why = parse_srun_unavailable(line); why && !round.refused) {
      if (round.pending.empty()) round.pending = *why;
      round.queued = true;
      return;
    }
    auto ev = parse_srun_error(line);
    // After a failed launch srun aborts the step and kills the healthy nodes' tasks: those stay
    // open, to be asked again, instead of being blamed for it.
    if (ev && ev->status == NodeStatus::failed && round.any_unreachable && ev->detail.ends_with("Killed")) return;
    if (ev && in_round(ev->node)) {
      // A task that exited badly may still have printed its document first; that stands.
      if (ev->status == NodeStatus::unreachable) {
        round.any_unreachable = true;
        ev->detail += "; is slurmd running there? (scontrol ping, scontrol show node, its slurmd log)";
      }
      done.settle({ev->node, ev->status, {}, "srun: " + ev->detail, seconds()});
    } else if (round.fatal.empty() && is_fatal_srun_error(line)) {
      round.fatal = std::string(core::trim(line));
    } else if (auto t = core::trim(line); t.starts_with("srun: ") && !t.starts_with("srun: error: ")) {
      last_info = std::string(t.substr(6));
    }
  };
  const core::Child::Sink on_out = [&](std::string_view bytes) { decoder.feed(bytes); };
  const core::Child::Sink on_err = [&](std::string_view bytes) {
    for (char c : bytes) {
      if (c != '\n') {
        if (err_line.size() < 4096) err_line += c;
        continue;
      }
      on_err_line(err_line);
      err_line.clear();
    }
  };

  bool streams_open = true;
  while (streams_open && open_count() > 0 && Clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    streams_open = child->pump(std::min(left, std::chrono::milliseconds(200)), on_out, on_err);
  }
  // Every node settled (or time is up): srun normally ends by itself within moments; then SIGTERM
  // (srun cancels the step), then SIGKILL of its group.
  auto status = child->wait_exit(std::chrono::milliseconds(open_count() == 0 ? 1500 : 0));
  if (!status) {
    child->signal_group(SIGTERM);
    for (int i = 0; i < 20 && !status; ++i) {
      child->pump(std::chrono::milliseconds(50), on_out, on_err);
      status = child->wait_exit(std::chrono::milliseconds(0));
    }
  }
  if (!status) {
    child->signal_group(SIGKILL);
    status = child->wait_exit(std::chrono::milliseconds(1000));
  }
  while (child->pump(std::chrono::milliseconds(0), on_out, on_err)) {
  }
  if (!err_line.empty()) on_err_line(err_line);
  decoder.finish();
  round.exit = status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  log += fmt::format("exit {}\n{}", round.exit, stderr_text);
  for (const auto& node : nodes)
    if (!done.contains(node)) round.open.push_back(node);
  // A job srun left behind when it was killed outside an allocation goes with it: nothing of ours
  // stays queued to run later on a node someone else has taken back.
  if (!o.overlap && (round.exit < 0 || !round.queued_job.empty())) {
    std::vector<std::string> cancel = {"scancel", "--name", o.job_name};
    if (!round.queued_job.empty()) cancel = {"scancel", round.queued_job};
    auto r = core::run_process({cancel, o.tool_timeout, 1u << 16, slurm_env(o)});
    if (!r || r->exit_code != 0)
      log += fmt::format("cmax: {} failed; cancel it by hand (squeue -n {})\n", core::describe_argv(cancel), o.job_name);
  }
  return round;
}

// Settles what a round left open, in Slurm's words.
// `first` is the round that queued before a split, whose reason (from squeue) and wait are the
// ones to report; the split's own short rounds only say which nodes could not start.
void settle_open(const Round& round, const Round* first, const std::string& reservation, const SlurmFanoutOptions& o,
                 Clock::time_point start, Clock::time_point deadline, Settled& done) {
  const double at = std::chrono::duration<double>(Clock::now() - start).count();
  for (const auto& node : round.open) {
    if (round.refused) {
      done.settle({node, NodeStatus::not_scheduled, {},
                   fmt::format("reservation {} does not admit this user ({}): run cmax as one of its users",
                               reservation.empty() ? "(none named)" : reservation, round.fatal.empty() ? "srun refused" : round.fatal),
                   at});
    } else if (round.queued) {
      const Round& r = first != nullptr ? *first : round;
      std::string why = r.reason.empty() ? r.pending : r.reason;
      if (!r.reason.empty() && !r.pending.empty()) why += ": " + r.pending;
      std::string job = r.queued_job.empty() ? std::string() : " " + r.queued_job;
      done.settle({node, NodeStatus::queued, {},
                   fmt::format("Slurm would not start the collect job{} within {:.0f} s (reason: {}); {}", job,
                               o.queue_wait.count() / 1000.0, why.empty() ? "not given" : why,
                               queued_advice(why, reservation)),
                   at});
    } else if (Clock::now() >= deadline && round.fatal.empty()) {
      done.settle({node, NodeStatus::timeout, {},
                   fmt::format("no answer within the node timeout of {:.0f} s", o.node_timeout.count() / 1000.0), at});
    } else {
      std::string detail = round.fatal.empty() ? fmt::format("srun ended (exit {}) without this node's document", round.exit)
                                               : "srun: " + round.fatal;
      done.settle({node, NodeStatus::failed, {}, std::move(detail), at});
    }
  }
}

// The most sruns one fan-out starts while it splits queued groups.
constexpr int kMaxSruns = 64;

// One group of the plan, to the end: a round; a second one without the unreachable nodes when a
// failed launch made srun abort the step under the healthy ones; and, when Slurm queued the step
// (one busy or reserved node holds up the whole allocation), the nodes split in halves and asked
// again side by side with a short queue wait, so that the nodes that can run do, and only the
// ones that cannot are reported queued.
void run_group(const std::vector<std::string>& nodes, const std::string& reservation, const SlurmFanoutOptions& o,
               Clock::time_point start, Clock::time_point deadline, std::string& log, Settled& done,
               std::atomic<int>& sruns, const Round* first = nullptr) {
  ++sruns;
  // The split's rounds wait a second for their allocation; the first round waited the user's wait.
  SlurmFanoutOptions round_options = o;
  if (first != nullptr) round_options.queue_wait = std::chrono::seconds(1);
  auto round = run_round(nodes, reservation, round_options, start, deadline, log, done);
  if (!round.open.empty() && round.any_unreachable && Clock::now() + std::chrono::seconds(1) < deadline) {
    log += fmt::format("cmax: asking {} again without the unreachable node(s)\n", fmt::join(round.open, ","));
    ++sruns;
    round = run_round(round.open, reservation, round_options, start, deadline, log, done);
  }
  if (round.queued && round.open.size() > 1 && sruns + 2 <= kMaxSruns &&
      Clock::now() + std::chrono::seconds(3) < deadline) {
    log += fmt::format("cmax: Slurm queued the step for {}: asking them again in halves\n", fmt::join(round.open, ","));
    const Round& queued = first != nullptr ? *first : round;
    const auto half = round.open.begin() + static_cast<std::ptrdiff_t>(round.open.size() / 2);
    const std::vector<std::string> left(round.open.begin(), half), right(half, round.open.end());
    std::string left_log, right_log;
    {
      std::jthread a([&] { run_group(left, reservation, o, start, deadline, left_log, done, sruns, &queued); });
      run_group(right, reservation, o, start, deadline, right_log, done, sruns, &queued);
    }
    log += left_log + right_log;
    return;
  }
  settle_open(round, first, reservation, o, start, deadline, done);
}

}  // namespace

Result<SlurmFanoutResult> slurm_fanout(const SlurmFanoutOptions& options, const NodeCallback& on_node) {
  SlurmFanoutOptions o = options;
  auto conf = sched::effective_slurm_conf(o.slurm_conf);
  if (!conf) return Unexpected<Error>{conf.error()};
  o.slurm_conf = *conf;
  if (o.user.empty()) o.user = user_name();

  auto listed = list_nodes(o);
  if (!listed) return Unexpected<Error>{listed.error()};
  SlurmFanoutResult result;
  PlanInput in{*listed, {}, o.reservation, o.user};
  if (!o.overlap) {
    if (auto res = list_reservations(o)) in.reservations = std::move(*res);
    else if (!o.reservation.empty()) return Unexpected<Error>{res.error()};
    else result.log += fmt::format("cmax: {}; planning as if there were none\n", res.error().message);
  }
  SrunOptions so{o.collect_argv, o.partition, o.job_name, o.overlap, {}, o.node_timeout, o.queue_wait};
  auto plan = plan_srun(in, so);
  if (!plan) return Unexpected<Error>{plan.error()};
  result.plan = std::move(*plan);
  for (const auto& note : result.plan.notes) result.log += "cmax: " + note + "\n";

  Settled done(on_node);
  for (const auto& s : result.plan.skipped) done.settle(s);
  if (!result.plan.groups.empty() && !o.dry_run) {
    const auto start = Clock::now();
    const auto deadline = start + o.node_timeout;
    std::vector<std::string> logs(result.plan.groups.size());
    std::atomic<int> sruns{0};
    {
      std::vector<std::jthread> threads;
      for (std::size_t i = 0; i < result.plan.groups.size(); ++i)
        threads.emplace_back([&, i] {
          const auto& g = result.plan.groups[i];
          run_group(g.nodes, g.reservation, o, start, deadline, logs[i], done, sruns);
        });
    }
    for (const auto& l : logs) result.log += l;
  }
  auto settled = done.take();
  for (const auto& n : *listed)
    if (auto it = settled.find(n.name); it != settled.end()) result.nodes.push_back(std::move(it->second));
  return result;
}

}  // namespace cmax::cluster
