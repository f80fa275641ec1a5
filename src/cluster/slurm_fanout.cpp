#include "cluster/slurm_fanout.h"

#include <signal.h>
#include <sys/wait.h>

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

}  // namespace

Result<SlurmFanoutResult> slurm_fanout(const SlurmFanoutOptions& o, const NodeCallback& on_node) {
  auto listed = list_nodes(o);
  if (!listed) return Unexpected<Error>{listed.error()};
  SlurmFanoutResult result;
  for (const auto& n : *listed) {
    if (auto skip = not_schedulable(n, o.overlap)) result.plan.skipped.push_back(std::move(*skip));
    else result.plan.nodes.push_back(n.name);
  }
  SrunOptions so{o.collect_argv, o.partition, o.job_name, o.overlap, o.node_timeout};
  if (!result.plan.nodes.empty()) result.plan.argv = srun_argv(result.plan.nodes, so);

  // Settled nodes, by name; the plan's order is restored at the end.
  std::map<std::string, NodeOutput, std::less<>> settled;
  auto settle = [&](NodeOutput out) {
    if (settled.contains(out.node)) return;
    if (on_node) on_node(out);
    settled.emplace(out.node, std::move(out));
  };
  for (const auto& s : result.plan.skipped) settle(s);
  auto finish = [&]() {
    for (const auto& n : *listed)
      if (auto it = settled.find(n.name); it != settled.end()) result.nodes.push_back(std::move(it->second));
    return result;
  };
  if (result.plan.nodes.empty() || o.dry_run) return finish();

  const auto start = Clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  auto planned = [&](std::string_view node) {
    for (const auto& n : result.plan.nodes)
      if (n == node) return true;
    return false;
  };
  auto open = [&] {
    std::size_t n = 0;
    for (const auto& node : result.plan.nodes) n += settled.contains(node) ? 0 : 1;
    return n;
  };

  auto child = core::Child::spawn({result.plan.argv, o.node_timeout, 0, slurm_env(o)});
  if (!child) {
    for (const auto& node : result.plan.nodes)
      settle({node, NodeStatus::unreachable, {}, fmt::format("srun could not start: {}", child.error().message), 0});
    return finish();
  }

  FrameDecoder decoder([&](FramedDocument d) {
    std::string node = d.node;
    if (!planned(node)) return;  // a document from a node not asked (a renamed host): ignored
    if (!d.error.empty()) settle({node, NodeStatus::failed, {}, "its document was damaged: " + d.error, seconds()});
    else settle({node, NodeStatus::ok, std::move(d.document), {}, seconds()});
  });
  std::string err_line;
  std::string fatal;
  auto on_err_line = [&](std::string_view line) {
    if (result.srun_stderr.size() < kMaxStderr) {
      result.srun_stderr.append(line.substr(0, kMaxStderr - result.srun_stderr.size()));
      result.srun_stderr += '\n';
    }
    if (auto ev = parse_srun_error(line); ev && planned(ev->node)) {
      // A task that exited badly may still have printed its document first; that stands.
      settle({ev->node, ev->status, {}, "srun: " + ev->detail, seconds()});
    } else if (fatal.empty() && is_fatal_srun_error(line)) {
      fatal = std::string(core::trim(line));
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

  const auto deadline = start + o.node_timeout;
  bool streams_open = true;
  while (streams_open && open() > 0 && Clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    streams_open = child->pump(std::min(left, std::chrono::milliseconds(200)), on_out, on_err);
  }
  // Every node settled (or time is up): srun normally ends by itself within moments; then SIGTERM
  // (srun cancels the step), then SIGKILL of its group.
  auto status = child->wait_exit(std::chrono::milliseconds(open() == 0 ? 1500 : 0));
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
  if (status && WIFEXITED(*status)) result.srun_exit = WEXITSTATUS(*status);

  const auto& other = decoder.other_output();
  for (const auto& node : result.plan.nodes) {
    if (settled.contains(node)) continue;
    if (Clock::now() >= deadline && fatal.empty()) {
      settle({node, NodeStatus::timeout, {}, fmt::format("no answer within the node timeout of {:.0f} s", o.node_timeout.count() / 1000.0),
              seconds()});
    } else {
      std::string detail = fatal.empty() ? fmt::format("srun ended (exit {}) without this node's document", result.srun_exit)
                                         : "srun: " + fatal;
      if (auto it = other.find(-1); it != other.end() && !it->second.empty())
        detail += "; output: " + core::clip(core::trim(it->second), 200);
      settle({node, NodeStatus::failed, {}, std::move(detail), seconds()});
    }
  }
  // A step srun left behind when it was killed outside an allocation goes with the job.
  if (!o.overlap && result.srun_exit < 0) {
    auto r = core::run_process({{"scancel", "--name", o.job_name}, o.tool_timeout, 1u << 16, slurm_env(o)});
    if (!r || r->exit_code != 0) result.srun_stderr += "cmax: scancel of the collect job failed; cancel it by hand (squeue -n " + o.job_name + ")\n";
  }
  return finish();
}

}  // namespace cmax::cluster
