#include "cluster/slurm_fanout.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "cluster/frame.h"
#include "core/process.h"
#include "core/strings.h"

namespace cmax::cluster {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxStderr = 64u << 10;

std::vector<std::string> slurm_env(const SlurmFanoutOptions& o) {
  std::vector<std::string> env = {"SLURM_TIME_FORMAT=standard"};
  if (!o.slurm_conf.empty()) env.push_back("SLURM_CONF=" + o.slurm_conf);
  return env;
}

Result<std::vector<SinfoNode>> list_nodes(const SlurmFanoutOptions& o) {
  std::vector<std::string> argv = {"sinfo", "-h", "-N", "-o", "%N|%T|%E"};
  if (!o.partition.empty()) argv.insert(argv.end(), {"-p", o.partition});
  if (!o.nodelist.empty()) argv.insert(argv.end(), {"-n", o.nodelist});
  auto r = core::run_process({argv, o.tool_timeout, 16u << 20, slurm_env(o)});
  if (!r) return fail("list the cluster's nodes: {}; is Slurm's client installed and SLURM_CONF set?", r.error().message);
  if (r->timed_out)
    return fail("list the cluster's nodes: {} did not answer in {} ms: slurmctld unreachable? (scontrol ping)",
                core::describe_argv(argv), o.tool_timeout.count());
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

// One srun over `nodes`. Settles through `settle` every node it hears about; returns the nodes it
// left open (killed with the step when srun aborted it, or not heard from by the deadline) and
// whether srun aborted the step.
struct Round {
  std::vector<std::string> open;
  std::string fatal;  // the line srun ended the step with; empty when it did not
  bool any_unreachable = false;
};

Round run_round(const std::vector<std::string>& nodes, const SlurmFanoutOptions& o, Clock::time_point start,
                Clock::time_point deadline, SlurmFanoutResult& result,
                const std::function<void(NodeOutput)>& settle, const std::function<bool(std::string_view)>& settled) {
  Round round;
  auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  auto in_round = [&](std::string_view node) { return std::find(nodes.begin(), nodes.end(), node) != nodes.end(); };
  auto open_count = [&] {
    std::size_t n = 0;
    for (const auto& node : nodes) n += settled(node) ? 0 : 1;
    return n;
  };
  SrunOptions so{o.collect_argv, o.partition, o.job_name, o.overlap, o.node_timeout};
  auto argv = srun_argv(nodes, so);
  if (result.plan.argv.empty()) result.plan.argv = argv;
  auto child = core::Child::spawn({argv, o.node_timeout, 0, slurm_env(o)});
  if (!child) {
    for (const auto& node : nodes)
      settle({node, NodeStatus::unreachable, {}, fmt::format("srun could not start: {}", child.error().message), 0});
    return round;
  }

  FrameDecoder decoder([&](FramedDocument d) {
    std::string node = d.node;
    if (!in_round(node)) return;  // a document from a node not asked (a renamed host): ignored
    if (!d.error.empty()) settle({node, NodeStatus::failed, {}, "its document was damaged: " + d.error, seconds()});
    else settle({node, NodeStatus::ok, std::move(d.document), {}, seconds()});
  });
  std::string err_line;
  auto on_err_line = [&](std::string_view line) {
    if (result.srun_stderr.size() < kMaxStderr) {
      result.srun_stderr.append(line.substr(0, kMaxStderr - result.srun_stderr.size()));
      result.srun_stderr += '\n';
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
      settle({ev->node, ev->status, {}, "srun: " + ev->detail, seconds()});
    } else if (round.fatal.empty() && is_fatal_srun_error(line)) {
      round.fatal = std::string(core::trim(line));
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
  result.srun_exit = status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  for (const auto& node : nodes)
    if (!settled(node)) round.open.push_back(node);
  // A step srun left behind when it was killed outside an allocation goes with the job.
  if (!o.overlap && result.srun_exit < 0) {
    auto r = core::run_process({{"scancel", "--name", o.job_name}, o.tool_timeout, 1u << 16, slurm_env(o)});
    if (!r || r->exit_code != 0)
      result.srun_stderr += "cmax: scancel of the collect job failed; cancel it by hand (squeue -n " + o.job_name + ")\n";
  }
  return round;
}

}  // namespace

Result<SlurmFanoutResult> slurm_fanout(const SlurmFanoutOptions& o, const NodeCallback& on_node) {
  auto listed = list_nodes(o);
  if (!listed) return Unexpected<Error>{listed.error()};
  SlurmFanoutResult result;
  for (const auto& n : *listed) {
    if (auto skip = not_schedulable(n, o.overlap)) result.plan.skipped.push_back(std::move(*skip));
    else result.plan.nodes.push_back(n.name);
  }
  if (!result.plan.nodes.empty())
    result.plan.argv = srun_argv(result.plan.nodes, {o.collect_argv, o.partition, o.job_name, o.overlap, o.node_timeout});

  // Settled nodes, by name; the plan's order is restored at the end.
  std::map<std::string, NodeOutput, std::less<>> done;
  auto settle = [&](NodeOutput out) {
    if (done.contains(out.node)) return;
    if (on_node) on_node(out);
    done.emplace(out.node, std::move(out));
  };
  auto settled = [&](std::string_view node) { return done.contains(node); };
  for (const auto& s : result.plan.skipped) settle(s);
  if (!result.plan.nodes.empty() && !o.dry_run) {
    const auto start = Clock::now();
    const auto deadline = start + o.node_timeout;
    auto round = run_round(result.plan.nodes, o, start, deadline, result, settle, settled);
    // A launch that failed on one node makes srun abort the whole step, killing the collects still
    // running on the healthy nodes: ask those again, once, without the unreachable ones.
    if (!round.open.empty() && round.any_unreachable && Clock::now() + std::chrono::seconds(1) < deadline) {
      result.srun_stderr += fmt::format("cmax: asking {} again without the unreachable node(s)\n", fmt::join(round.open, ","));
      round = run_round(round.open, o, start, deadline, result, settle, settled);
    }
    for (const auto& node : round.open) {
      if (Clock::now() >= deadline && round.fatal.empty()) {
        settle({node, NodeStatus::timeout, {},
                fmt::format("no answer within the node timeout of {:.0f} s", o.node_timeout.count() / 1000.0),
                std::chrono::duration<double>(Clock::now() - start).count()});
      } else {
        std::string detail = round.fatal.empty()
                                 ? fmt::format("srun ended (exit {}) without this node's document", result.srun_exit)
                                 : "srun: " + round.fatal;
        settle({node, NodeStatus::failed, {}, std::move(detail), std::chrono::duration<double>(Clock::now() - start).count()});
      }
    }
  }
  for (const auto& n : *listed)
    if (auto it = done.find(n.name); it != done.end()) result.nodes.push_back(std::move(it->second));
  return result;
}

}  // namespace cmax::cluster
