#include "drill/run_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "drill/marker.h"
#include "sched/kubernetes_parse.h"
#include "sched/policy.h"
#include "sched/slurm_parse.h"

namespace cmax::drill {
namespace {

using SteadyClock = std::chrono::steady_clock;

Result<std::vector<std::string>> resolve_nodes(const RunOptions& f, Site& site) {
  if (f.nodes.empty() && f.rack.empty())
    return fail("--nodes or --rack is required: name the nodes to drill (nothing is chosen for you)");
  if (!f.nodes.empty() && !f.rack.empty()) return fail("give --nodes or --rack, not both");
  auto nodes = f.rack.empty() ? sched::expand_hostlist(f.nodes) : site.rack_nodes(f.rack);
  if (!nodes) {
    if (f.rack.empty()) return fail("--nodes {}: {}", f.nodes, nodes.error().message);
    return Unexpected<Error>{nodes.error()};
  }
  if (nodes->empty()) return fail("{}", f.rack.empty() ? "--nodes names no node" : "--rack " + f.rack + " holds no node");
  if (static_cast<int>(nodes->size()) > f.max_nodes)
    return fail("{} {} nodes; one drill may touch at most {} (--max-nodes)",
                f.rack.empty() ? std::string("--nodes names") : "--rack " + f.rack + " holds", nodes->size(),
                f.max_nodes);
  return nodes;
}

// Flags of one scheduler given to the other, and combinations that measure nothing.
Result<void> check_flags(const RunOptions& f, std::size_t targets) {
  if (!f.kubernetes() && !f.workload.empty())
    return fail("--workload is Kubernetes' (a label selector of pods); on Slurm watch a --job, --reservation or "
                "--partition");
  if (f.kubernetes() && (f.reboot || f.await_reboot))
    return fail("--reboot and --await-reboot time Slurm's reboot flow (scontrol reboot, BootTime); on Kubernetes "
                "the drill times detected, drained and returned");
  if (f.reboot && f.await_reboot) return fail("give --reboot (the drill requests it) or --await-reboot (the provider does), not both");
  if (targets > 1 && !f.partition.empty())
    return fail("--partition with several --nodes: a node joining the partition cannot be told apart as one "
                "target's replacement; watch a --reservation (a target leaving it is its own replacement) or "
                "drill the nodes one at a time");
  return ok();
}

Result<void> check_kubernetes(const RunOptions& f, const std::vector<std::string>& nodes, const std::string& here) {
  if (!f.reservation.empty() || !f.partition.empty() || !f.job.empty())
    return fail("--reservation, --partition and --job are Slurm's; on Kubernetes the replacement is the "
                "workload's pods rescheduled (--workload SELECTOR)");
  if (f.inject == "srun") return fail("--inject srun needs Slurm; on Kubernetes run cmax drill on the node itself");
  for (const auto& n : nodes)
    if (f.inject == "auto" && n != here)
      return fail("on Kubernetes the injection is local: run cmax drill on node {} itself (a privileged pod or kubectl "
                  "debug node/{}), or pass --inject local if this machine ({}) is that node under another name",
                  n, n, here);
  return ok();
}

// The target as it is now. On Kubernetes also the drill's own view: any cordon, a NotReady node
// (cmax's node_state sees only cmax's own marks, which the drill's view takes for the node's own
// taints).
Result<sched::NodeState> node_before(const RunOptions& f, Site& site, const std::string& n) {
  auto s = site.scheduler().node_state(n);
  if (s && f.kubernetes() && !s->drain_flag()) {
    WatchOptions wo;
    wo.node = n;
    auto o = site.poller().another()->observe(wo, SteadyClock::now());
    if (o) s = o->target;
    else s = Unexpected<Error>{o.error()};
  }
  if (!s) return fail("{}; nothing was injected", s.error().message);
  if (s->drain_flag() || s->down())
    return fail("node {} is already out of service ({}{}): a drill there measures nothing; nothing was injected", n,
                s->state, s->reason.empty() ? "" : ", reason \"" + s->reason + "\"");
  return s;
}

// The watched partition and job can be read, and the job runs on every target.
Result<void> check_watched(const Plan& plan, Site& site) {
  const RunOptions& f = plan.options;
  if (!f.partition.empty())
    if (auto p = site.partition(f.partition); !p)
      return fail("read partition {}: {}; nothing was injected", f.partition, p.error().message);
  if (f.job.empty()) return ok();
  auto j = site.job(f.job);
  if (!j) return fail("read job {}: {}; nothing was injected", f.job, j.error().message);
  for (const auto& n : plan.nodes)
    if (!j->running() || !j->contains(n))
      return fail("job {} is {} on {}, not running on {}: its requeue could not be seen; nothing was injected", f.job,
                  j->state, j->nodes.empty() ? "no node" : fmt::format("{}", fmt::join(j->nodes, ",")), n);
  return ok();
}

}  // namespace

Result<Plan> check_request(const RunOptions& options, Site& site) {
  Plan plan;
  plan.options = options;
  RunOptions& f = plan.options;
  auto scenario = load_scenario(f.scenario);
  if (!scenario) return Unexpected<Error>{scenario.error()};
  plan.scenario = *scenario;
  auto steps = render(plan.scenario, targets_for(f.drill_id, f.gpu));
  if (!steps) return Unexpected<Error>{steps.error()};
  plan.steps = std::move(*steps);
  auto nodes = resolve_nodes(f, site);
  if (!nodes) return Unexpected<Error>{nodes.error()};
  plan.nodes = std::move(*nodes);
  if (f.nodes.empty()) f.nodes = fmt::format("{}", fmt::join(plan.nodes, ","));
  if (auto c = check_flags(f, plan.nodes.size()); !c) return Unexpected<Error>{c.error()};
  for (const auto& n : plan.nodes) {
    auto r = f.kubernetes() ? sched::kube::check_node_name(n) : sched::check_node_name(n);
    if (!r) return fail("--nodes: {}", r.error().message);
  }
  const std::string here = site.here();
  if (f.kubernetes())
    if (auto c = check_kubernetes(f, plan.nodes, here); !c) return Unexpected<Error>{c.error()};
  for (const auto& n : plan.nodes)
    plan.local.push_back(f.inject == "local" || (f.inject == "auto" && (n == here || f.kubernetes())));
  return plan;
}

Result<ClusterBefore> check_before_injecting(const Plan& plan, Site& site) {
  const RunOptions& f = plan.options;
  ClusterBefore out;
  for (const auto& n : plan.nodes) {
    auto s = node_before(f, site, n);
    if (!s) return Unexpected<Error>{s.error()};
    out.before.push_back(*s);
  }
  if (!f.reservation.empty())
    if (auto r = site.check_reservation(f.reservation); !r)
      return fail("{}; nothing was injected", r.error().message);
  // Every active reservation, as it is now: an srun to a reserved target must run inside its
  // reservation, and cleanup puts back any reservation that held a target (REPLACE_DOWN swaps a
  // spare in for it).
  auto all = site.reservations();
  if (!all) return fail("read reservations: {}; nothing was injected", all.error().message);
  out.reservations = std::move(*all);
  if (auto c = check_watched(plan, site); !c) return Unexpected<Error>{c.error()};
  return out;
}

}  // namespace cmax::drill
